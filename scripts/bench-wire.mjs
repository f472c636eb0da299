// The bench's figures for what a machine pulls at boot (part of scripts/bench.mjs, `--only wire`):
// the bytes on the wire of each platform's binary, plain and as each compressed copy the build
// writes beside it, and the time from the loader's start to `machineadm version` over a link of
// 100 Mbit/s (a local server that paces what it sends), plain and compressed.
//
// Goals: a quarter of the bytes on the wire (the zstd copy, which Linux loaders take) and a third
// (the gzip copy: 43 of 126 MiB, as the issue that asked for the copies measured with gzip -6);
// and the loader at the download's floor, the time its bytes take at 100 Mbit/s (<= 1.15x, the
// factor the boot path is held to).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

const RATE = 100e6 / 8; // 100 Mbit/s, in bytes per second
const PLATFORMS = ['machineadm-linux-x64', 'machineadm-linux-arm64', 'machineadm-windows-x64.exe'];
const GOALS = { '.zst': 0.25, '.gz': 0.34 };

// Serves a folder as three mirrors: /plain/ has the binaries and their signatures, /gz/ the .gz
// copies too, /zst/ the .zst ones too (anything else: 404). Every response is paced at `rate`
// bytes a second from its first byte, as a link of that speed would deliver it.
const SERVER = `import { createServer } from 'node:http';
import { readFileSync, existsSync } from 'node:fs';
const [dir, rate] = [process.argv[2], Number(process.argv[3])];
const has = { plain: [''], gz: ['', '.gz'], zst: ['', '.gz', '.zst'] };
const cache = new Map();
const server = createServer((req, res) => {
  const [, mirror, file] = /^\\/(\\w+)\\/([\\w.-]+)$/.exec(req.url) ?? [];
  const suffix = /\\.(gz|zst)$/.exec(file ?? '')?.[0] ?? '';
  if (!has[mirror] || !(file.endsWith('.minisig') || has[mirror].includes(suffix)) || !existsSync(dir + '/' + file)) return void res.writeHead(404).end();
  if (!cache.has(file)) cache.set(file, readFileSync(dir + '/' + file));
  const body = cache.get(file);
  res.writeHead(200, { 'content-length': body.length });
  const start = Date.now();
  let sent = 0;
  const pump = () => {
    while (sent < body.length) {
      const due = ((Date.now() - start) / 1000) * rate;
      if (sent > due) return void setTimeout(pump, Math.max(1, Math.ceil(((sent - due) / rate) * 1000)));
      const n = Math.min(64 * 1024, body.length - sent);
      const more = res.write(body.subarray(sent, sent + n));
      sent += n;
      if (!more) return void res.once('drain', pump);
    }
    res.end();
  };
  pump();
});
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
`;

const mib = (bytes) => `${(bytes / 1048576).toFixed(1)} MiB`;

/** ctx: { work, root, node, binary, quick, run, median, row, fail } from scripts/bench.mjs. */
export async function wireFigures({ work, root, node, binary, quick, run, median, row, fail }) {
  const dist = dirname(binary);
  // --- bytes on the wire, per platform ------------------------------------------------------
  for (const name of PLATFORMS) {
    const plain = join(dist, name);
    if (!existsSync(plain)) {
      process.stderr.write(`bench: no ${plain}: no bytes-on-the-wire figure for it (npm run build builds every platform)\n`);
      continue;
    }
    for (const suffix of Object.keys(GOALS)) {
      if (!existsSync(plain + suffix)) continue;
      row(`bytes on the wire, ${name}${suffix} vs ${name}`, statSync(plain + suffix).size, statSync(plain).size, GOALS[suffix], {
        format: mib,
        note: `at 100 Mbit/s ${((statSync(plain + suffix).size / RATE) * 1000).toFixed(0)} vs ${((statSync(plain).size / RATE) * 1000).toFixed(0)} ms`,
      });
    }
  }

  // --- the loader over 100 Mbit/s ---------------------------------------------------------------
  const name = basename(binary);
  for (const suffix of ['.zst', '.gz']) if (!existsSync(binary + suffix)) fail(`${binary}${suffix} is missing: build with its compressed copies (npm run build -- --targets linux-x64)`);
  const served = join(work, 'wire-served');
  mkdirSync(served, { recursive: true });
  for (const suffix of ['', '.gz', '.zst']) symlinkSync(binary + suffix, join(served, name + suffix));
  const key = join(work, 'wire.key');
  const pub = join(work, 'wire.pub');
  for (const argv of [['minisign', '-G', '-W', '-s', key, '-p', pub], ['minisign', '-S', '-s', key, '-m', join(served, name), '-x', join(served, `${name}.minisig`)]]) {
    const r = await run(argv);
    if (r.code !== 0) fail(`${argv.slice(0, 2).join(' ')} failed: ${r.stderr.trim()}`);
  }
  const keyLine = readFileSync(pub, 'utf8').split('\n')[1];
  // Without minisign on PATH the loader verifies with openssl, as on most cloud images.
  const noMinisign = join(work, 'wire-bin');
  mkdirSync(noMinisign);
  for (const tool of readdirSync('/usr/bin')) if (tool !== 'minisign') symlinkSync(join('/usr/bin', tool), join(noMinisign, tool));
  writeFileSync(join(work, 'wire-serve.mjs'), SERVER);
  const server = spawn(node, [join(work, 'wire-serve.mjs'), served, String(RATE)], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const port = await new Promise((ok) => server.stdout.once('data', (d) => ok(Number(String(d).trim()))));
    const dest = join(work, 'wire-install', 'machineadm');
    const forms = { plain: '', gz: '.gz', zst: '.zst' };
    const verifiers = { openssl: noMinisign, minisign: process.env.PATH };
    const times = Object.fromEntries(Object.keys(verifiers).map((v) => [v, Object.fromEntries(Object.keys(forms).map((f) => [f, []]))]));
    const repeats = quick ? 1 : 5;
    // Alternating, so that the load of the machine weighs on each form alike.
    for (let i = 0; i < repeats; i++) {
      for (const [verifier, path] of Object.entries(verifiers)) {
        for (const form of Object.keys(forms)) {
          rmSync(dirname(dest), { recursive: true, force: true });
          const env = { PATH: path, HOME: work, TMPDIR: work, MACHINEADM_BASE_URL: `http://127.0.0.1:${port}/${form}`, MACHINEADM_PUBKEY: keyLine, MACHINEADM_DEST: dest };
          const r = await run(['sh', join(root, 'docs', 'loaders', 'machineadm-loader.sh'), 'version'], { env });
          if (r.code !== 0) fail(`the loader (${form}, ${verifier}) exited with ${r.code}: ${r.stderr.trim().slice(-400)}`);
          if (!r.stderr.includes(`verified with ${verifier}`)) fail(`the loader (${form}) did not verify with ${verifier}: ${r.stderr.trim().slice(-400)}`);
          times[verifier][form].push(r);
        }
      }
    }
    rmSync(dirname(dest), { recursive: true, force: true });
    const signature = statSync(join(served, `${name}.minisig`)).size;
    for (const verifier of Object.keys(verifiers)) {
      const plainMs = median(times[verifier].plain.map((r) => r.ms));
      for (const [form, suffix] of Object.entries(forms)) {
        const ms = median(times[verifier][form].map((r) => r.ms));
        const cpu = median(times[verifier][form].map((r) => r.cpu));
        const wireMs = ((statSync(binary + suffix).size + signature) / RATE) * 1000;
        row(`loader to machineadm version over 100 Mbit/s, ${form === 'plain' ? 'plain binary' : `${name}${suffix}`} (${verifier} verifies) vs its bytes' time on the link`, ms, wireMs, 1.15, {
          note: `${form === 'plain' ? '' : `${(ms / plainMs).toFixed(2)}x the plain binary's ${plainMs.toFixed(0)} ms; `}CPU ${cpu.toFixed(2)} s (loader, download, inflate, verify, install, version); median of ${repeats}`,
        });
      }
    }
  } finally {
    server.kill();
  }
}
