// ora is loaded only when a spinner is shown: importing it costs startup time on every command.
import type { SpinnerFactory } from '../report/console.ts';

export async function spinnerFactory(): Promise<SpinnerFactory> {
  const { default: ora } = await import('ora');
  return () => ora({ stream: process.stderr }) as unknown as ReturnType<SpinnerFactory>;
}
