import { it } from 'vitest';
import { makeTestCa, startHttps } from '../config/helpers/servers.ts';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';
it('probe', async () => {
  const ca = makeTestCa(scratchDir());
  const server = await startHttps(ca, (req, res) => { if (req.url?.startsWith('/501')) { res.writeHead(501); return res.end(); } res.end('x'); });
  for (const args of [['config', 'validate', '-c', `${server.url}/501#ca=${ca.caFile}`], ['config', 'validate', '-c', `${server.url}/ok`], ['fetch', `${server.url}/ok`, '-o', '/tmp/probe/x', '--sha256', '0'.repeat(64)]]) {
    const r = await runCli(args);
    console.log(args.join(' '), '=>', r.code, '\n', r.stderr, r.stdout);
  }
  server.close();
}, 60000);
