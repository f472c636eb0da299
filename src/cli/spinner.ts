// ora is loaded only when a spinner is shown: importing it costs startup time on every command.
import type { SpinnerFactory } from '../report/console.ts';

export async function spinnerFactory(): Promise<SpinnerFactory> {
  const { default: ora } = await import('ora');
  // discardStdin would put the terminal in raw mode, where Ctrl-C is a byte, not SIGINT; ora's
  // discarder turns that byte back into a signal only while something reads standard input, and
  // nothing does: Ctrl-C was lost. The terminal keeps its own Ctrl-C.
  return () => ora({ stream: process.stderr, discardStdin: false }) as unknown as ReturnType<SpinnerFactory>;
}
