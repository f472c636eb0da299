// One run's reporting, as the CLI sets it up: the sinks in the order that makes them safe (the
// spool first, so an event is on disk before anything shows it; then the result files), and the
// end of the run (wait for delivery at most the deadline, write result.json and the run history).
import type { Host, RootedFileSystem } from '../host/index.ts';
import { createHttpPoster, type HttpPoster } from '../host/http-post.ts';
import type { EventBus } from '../engine/events.ts';
import type { ResolvedEndpoint } from './endpoints.ts';
import { EventReporter, type DeliveryCut, type DeliveryReport } from './delivery.ts';
import { spoolContents } from './spool.ts';
import { OutcomeFiles, type RunResultDocument } from './outcome.ts';
import { appendHistory, HISTORY_FILE } from './history.ts';

export interface ReportingOptions {
  bus: EventBus;
  host: Host;
  stateFs: RootedFileSystem;
  endpoints: readonly ResolvedEndpoint[];
  deadlineSeconds: number;
  poster?: HttpPoster;
  /** The result document of the run this one resumes after a reboot. */
  continues?: RunResultDocument;
  /** Where the result goes (resultFilesOf the command); result.json by default. */
  results?: { file: string; copy: string };
}

export interface ReportingResult {
  document: RunResultDocument | undefined;
  delivery: DeliveryReport | undefined;
  /** Files that could not be written (the run went on without them). */
  problems: string[];
}

export interface ReportingSession {
  /** Events still on their way, per endpoint: what finish() waits for, up to the deadline. */
  backlog(): { url: string; events: number }[];
  /**
   * Ends reporting; `deadlineMs` shortens the wait for delivery, and so does `cut` when its signal
   * aborts during the wait (the rest stays spooled).
   */
  finish(options?: { deadlineMs?: number; cut?: DeliveryCut }): Promise<ReportingResult>;
}

export async function openReporting(options: ReportingOptions): Promise<ReportingSession> {
  const { bus, host } = options;
  if (!bus.identity) throw new Error('the event bus has no machine identity');
  const detach: (() => void)[] = [];
  let reporter: EventReporter | undefined;
  if (options.endpoints.length > 0) {
    reporter = new EventReporter({
      endpoints: options.endpoints,
      identity: bus.identity,
      runId: bus.runId,
      stateFs: options.stateFs,
      poster: options.poster ?? createHttpPoster(),
      offline: host.offline,
      deadlineMs: options.deadlineSeconds * 1000,
    });
    await reporter.open();
    detach.push(bus.listen(reporter.listener));
  }
  const files = new OutcomeFiles({ fs: host.fs, stateFs: options.stateFs, identity: bus.identity, ...(options.continues ? { continues: options.continues } : {}), ...(options.results ? { results: options.results } : {}) });
  detach.push(bus.listen(files.listener));
  return {
    backlog: () => reporter?.backlog() ?? [],
    async finish(finishOptions = {}): Promise<ReportingResult> {
      for (const d of detach) d();
      // Without an endpoint, what the spool holds for endpoints no longer configured is still said.
      const delivery = reporter ? await reporter.finish(finishOptions.deadlineMs, finishOptions.cut) : await unsentWithoutEndpoints(options.stateFs, host.offline);
      // The run history for `status`: kept like the result files, never stopping the run.
      const historyProblems: string[] = [];
      const history = (doc: RunResultDocument) =>
        appendHistory(options.stateFs, doc).catch((error: unknown) => {
          historyProblems.push(`${options.stateFs.root}${HISTORY_FILE}: ${(error as Error).message}`);
        });
      const document = await files.finish(delivery, history);
      return { document, delivery, problems: [...files.problems, ...historyProblems, ...(delivery?.spoolErrors ?? [])] };
    },
  };
}

/** What the spool holds when this run has no endpoint to send it to: every event there stays unsent. */
async function unsentWithoutEndpoints(stateFs: RootedFileSystem, offline: boolean): Promise<DeliveryReport | undefined> {
  const orphaned = (await spoolContents(stateFs).catch(() => [])).filter((s) => s.events > 0);
  return orphaned.length ? { endpoints: [], orphaned, spoolErrors: [], offline } : undefined;
}
