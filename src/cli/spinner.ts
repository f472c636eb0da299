// ora is loaded only when a spinner is shown: importing it costs startup time on every command.
import type { SpinnerFactory } from '../report/console.ts';

/** `color: false` when the operator asked for none (NO_COLOR): ora's colour library does not read it. */
export async function spinnerFactory(options: { color: boolean }): Promise<SpinnerFactory> {
  const { default: ora } = await import('ora');
  // discardStdin would put the terminal in raw mode, where Ctrl-C is a byte, not SIGINT; ora's
  // discarder turns that byte back into a signal only while something reads standard input, and
  // nothing does: Ctrl-C was lost. The terminal keeps its own Ctrl-C.
  return () => ora({ stream: process.stderr, discardStdin: false, ...(options.color ? {} : { color: false }) }) as unknown as ReturnType<SpinnerFactory>;
}
