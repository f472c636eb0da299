// Test servers' large answers: streamed with back-pressure, never built in memory.
import type { ServerResponse } from 'node:http';

/** Sends `chunks` chunks of 64 KiB (1600 = 100 MB) without Content-Length, then ends. */
export function streamChunks(res: ServerResponse, chunks: number, fill: number): void {
  const chunk = Buffer.alloc(64 * 1024, fill);
  let left = chunks;
  const pump = (): void => {
    while (left > 0) {
      left--;
      if (!res.write(chunk)) return void res.once('drain', pump);
    }
    res.end();
  };
  // The client hangs up at its size limit: that is the point, not an error.
  res.on('error', () => {});
  pump();
}
