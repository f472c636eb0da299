#!/usr/bin/env node
// Stands in for a Windows command-line tool (sc.exe, shutdown.exe, djoin.exe, containerd.exe) under
// that name on PATH: appends its name and argument vector as one JSON line to NATIVE_RECORD,
// writes NATIVE_STDERR to standard error and exits with NATIVE_EXIT (Win32 tools report failure by
// exit code; scripts must read $LASTEXITCODE).
import { appendFileSync } from 'node:fs';
import { basename } from 'node:path';

const record = process.env.NATIVE_RECORD;
if (!record) {
  process.stderr.write('native-tool: NATIVE_RECORD is not set\n');
  process.exit(90);
}
appendFileSync(record, `${JSON.stringify([basename(process.argv[1]), ...process.argv.slice(2)])}\n`);
if (process.env.NATIVE_STDERR) process.stderr.write(`${process.env.NATIVE_STDERR}\n`);
process.exit(Number(process.env.NATIVE_EXIT ?? '0'));
