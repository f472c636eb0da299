// Reboot and resume, the machine's side: how a run that stopped for a reboot is started again at
// the next boot, and the restart itself. Linux: a systemd oneshot unit, enabled the way
// `systemctl enable` does it (a link in multi-user.target.wants), so it works under --root and
// before systemd runs. Windows: a scheduled task at startup running as SYSTEM (src/host/windows/).
import type { RootedFileSystem } from './fs.ts';
import type { ProcessRunner } from './exec.ts';

export interface ResumeRegistration {
  /** Registers `argv` to run once at the next boot (replacing an earlier registration). */
  register(argv: readonly string[]): Promise<void>;
  /** Removes the registration (nothing to do when there is none). */
  remove(): Promise<void>;
  /** The registered command line, if any. */
  registered(): Promise<readonly string[] | undefined>;
}

export const RESUME_UNIT = '/etc/systemd/system/machineadm-resume.service';
const RESUME_LINK = '/etc/systemd/system/multi-user.target.wants/machineadm-resume.service';

// systemd reads ExecStart= words C-style: inside double quotes, \ and " are escaped; $ starts a
// variable and % a specifier, so both are doubled to stand for themselves.
function systemdWord(arg: string): string {
  return `"${arg.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n').replace(/\$/g, '$$$$').replace(/%/g, '%%')}"`;
}

function parseSystemdWords(line: string): string[] {
  const words: string[] = [];
  const word = /"((?:[^"\\]|\\.)*)"/g;
  for (const match of line.matchAll(word)) {
    words.push(match[1]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c)).replace(/\$\$/g, '$').replace(/%%/g, '%'));
  }
  return words;
}

/** The unit that runs the recorded command once, when the network is up, at the next boot. */
export function renderResumeUnit(argv: readonly string[]): string {
  return [
    '# Written by machineadm: resumes the run that stopped for a reboot; machineadm removes this',
    '# unit when that run ends, whatever its result.',
    '[Unit]',
    'Description=machineadm: resume the run that stopped for a reboot',
    'Wants=network-online.target',
    'After=network-online.target',
    '',
    '[Service]',
    'Type=oneshot',
    `ExecStart=${argv.map(systemdWord).join(' ')}`,
    '',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ].join('\n');
}

export function systemdResume(fs: RootedFileSystem): ResumeRegistration {
  return {
    async register(argv) {
      // 0644 as every unit: systemd warns that a world-inaccessible unit's mode has no effect (its
      // content is readable through systemd's API anyway); the command line holds no secret.
      await fs.writeFile(RESUME_UNIT, renderResumeUnit(argv), { mode: 0o644, backup: false });
      if ((await fs.stat(RESUME_LINK))?.kind !== 'symlink') {
        await fs.mkdirp(RESUME_LINK.slice(0, RESUME_LINK.lastIndexOf('/')));
        await fs.symlink('../machineadm-resume.service', RESUME_LINK);
      }
    },
    async remove() {
      await fs.remove(RESUME_LINK);
      await fs.remove(RESUME_UNIT);
    },
    async registered() {
      const text = await fs.readText(RESUME_UNIT);
      const line = text?.split('\n').find((l) => l.startsWith('ExecStart='));
      return line ? parseSystemdWords(line.slice('ExecStart='.length)) : undefined;
    },
  };
}

/** Restarts the machine now (Linux: through systemd, so units stop cleanly). */
export function systemdRestart(proc: ProcessRunner): (reason: string) => Promise<void> {
  return async () => {
    await proc.run(['systemctl', 'reboot'], { timeoutMs: 60_000 });
  };
}
