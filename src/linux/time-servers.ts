// spec.timeServers: which time client the machine has and what machineadm writes for it. The
// detection reads files only (it works the same under a scratch --root); rendering is pure.
import type { RootedFileSystem } from '../host/index.ts';

export type TimeClient =
  /** chrony with a sourcedir under /etc: a file of its own there; `conf` is the chrony.conf that lists it. */
  | { kind: 'chrony-sources'; path: string; unit: string; conf?: string }
  /** chrony without one: a marked block in chrony.conf. */
  | { kind: 'chrony-block'; path: string; unit: string }
  | { kind: 'timesyncd'; path: string; unit: string; assumed?: boolean };

const CHRONY_CONFS = [
  { path: '/etc/chrony/chrony.conf', unit: 'chrony' },
  { path: '/etc/chrony.conf', unit: 'chronyd' },
];

/** The chrony.conf of chrony's unit (records of a sources file name it only when machineadm changed it). */
export function chronyConfOf(unit: string): string | undefined {
  return CHRONY_CONFS.find((c) => c.unit === unit)?.path;
}
const TIMESYNCD_MARKS = ['/etc/systemd/timesyncd.conf', '/lib/systemd/systemd-timesyncd', '/usr/lib/systemd/systemd-timesyncd'];
export const TIMESYNCD_DROP_IN = '/etc/systemd/timesyncd.conf.d/machineadm.conf';
export const SOURCES_FILE_NAME = 'machineadm.sources';
/** Debian's and Ubuntu's chrony.conf reads this sourcedir: machineadm's file goes there when it is listed. */
export const DEBIAN_SOURCES_DIR = '/etc/chrony/sources.d';
export const BLOCK_BEGIN = '# BEGIN machineadm spec.timeServers';
export const BLOCK_END = '# END machineadm spec.timeServers';

/** The sourcedir lines of a chrony.conf that are under /etc (a /run one is DHCP's, cleared at boot). */
export function chronySourceDirs(conf: string): string[] {
  return [...conf.matchAll(/^[ \t]*sourcedir[ \t]+(\S+)/gm)].map((m) => m[1]!.replace(/\/+$/, '')).filter((d) => d.startsWith('/etc/'));
}

/**
 * chrony when a chrony.conf is there (it is the client that runs when both are installed:
 * the chrony package disables timesyncd), else systemd-timesyncd when its configuration or
 * binary is there; undefined when neither is.
 */
export async function detectTimeClient(fs: RootedFileSystem): Promise<TimeClient | undefined> {
  for (const { path, unit } of CHRONY_CONFS) {
    const conf = await fs.readText(path);
    if (conf === undefined) continue;
    const dirs = chronySourceDirs(conf);
    const dir = dirs.find((d) => d === DEBIAN_SOURCES_DIR) ?? dirs[0];
    return dir ? { kind: 'chrony-sources', path: `${dir}/${SOURCES_FILE_NAME}`, unit, conf: path } : { kind: 'chrony-block', path, unit };
  }
  for (const mark of TIMESYNCD_MARKS) if (await fs.exists(mark)) return { kind: 'timesyncd', path: TIMESYNCD_DROP_IN, unit: 'systemd-timesyncd' };
  return undefined;
}

export function renderChronySources(servers: readonly string[]): string {
  return `# Written by machineadm from spec.timeServers.\n${servers.map((s) => `server ${s} iburst\n`).join('')}`;
}

export function renderTimesyncd(servers: readonly string[]): string {
  // Each NTP= adds to the servers of the files read before (timesyncd.conf first), and timesyncd
  // keeps to the first that answers: the empty one drops theirs, so these are the ones in use.
  return `# Written by machineadm from spec.timeServers.\n[Time]\nNTP=\nNTP=${servers.join(' ')}\n`;
}

/** chrony.conf with machineadm's block put in place of an earlier one, or added at the end. */
export function withChronyBlock(conf: string, servers: readonly string[]): string {
  const block = `${BLOCK_BEGIN}\n${servers.map((s) => `server ${s} iburst\n`).join('')}${BLOCK_END}\n`;
  const begin = conf.indexOf(`${BLOCK_BEGIN}\n`);
  const end = begin < 0 ? -1 : conf.indexOf(`${BLOCK_END}\n`, begin);
  if (begin >= 0 && end >= 0) return conf.slice(0, begin) + block + conf.slice(end + BLOCK_END.length + 1);
  return conf + (conf === '' || conf.endsWith('\n') ? '' : '\n') + block;
}

/**
 * chrony.conf without machineadm's block. `newlineAdded`: withChronyBlock ended the file's last
 * line for the block (the file had no final newline), taken away with it.
 */
export function withoutChronyBlock(conf: string, newlineAdded = false): string {
  const begin = conf.indexOf(`${BLOCK_BEGIN}\n`);
  const end = begin < 0 ? -1 : conf.indexOf(`${BLOCK_END}\n`, begin);
  if (begin < 0 || end < 0) return conf;
  const before = conf.slice(0, begin);
  const after = conf.slice(end + BLOCK_END.length + 1);
  return (newlineAdded && after === '' && before.endsWith('\n') ? before.slice(0, -1) : before) + after;
}

/** Whether withChronyBlock ends the last line of `conf` before it adds the block. */
export function blockAddsNewline(conf: string): boolean {
  return conf !== '' && !conf.endsWith('\n') && !conf.includes(`${BLOCK_BEGIN}\n`);
}

/** What machineadm puts before an image's source line of chrony.conf it turns off. */
export const SOURCE_OFF = '#machineadm spec.timeServers: ';

/**
 * chrony.conf with the image's own sources turned off (each line kept, behind SOURCE_OFF), so that
 * chrony uses spec.timeServers only: its server, pool and peer lines, and its sourcedir lines under
 * /etc but `keepDir` (machineadm's). Kept: a sourcedir elsewhere (/run/chrony-dhcp: the servers the
 * network's DHCP gives, which timesyncd also uses), refclock lines (hardware, no network), and the
 * lines of machineadm's block. chrony reads directives case-insensitively, after any indentation.
 */
export function withoutImageSources(conf: string, keepDir?: string): string {
  let inBlock = false;
  return conf
    .split('\n')
    .map((line) => {
      if (line === BLOCK_BEGIN) inBlock = true;
      if (line === BLOCK_END) inBlock = false;
      if (inBlock) return line;
      const [directive, value] = line.trim().split(/[ \t]+/);
      const source = /^(server|pool|peer)$/i.test(directive ?? '') && value !== undefined;
      const dir = /^sourcedir$/i.test(directive ?? '') ? value?.replace(/\/+$/, '') : undefined;
      return source || (dir?.startsWith('/etc/') && dir !== keepDir) ? SOURCE_OFF + line : line;
    })
    .join('\n');
}

/**
 * A chrony.conf or .sources file without machineadm's block and with the lines withoutImageSources
 * turned off given back: only what machineadm put there is taken away, so whatever else was
 * changed in the file since stays. `newlineAdded`: see withoutChronyBlock.
 */
export function withChronySourcesBack(text: string, newlineAdded = false): string {
  return withoutChronyBlock(text, newlineAdded)
    .split('\n')
    .map((line) => (line.startsWith(SOURCE_OFF) ? line.slice(SOURCE_OFF.length) : line))
    .join('\n');
}

/**
 * The command that makes the client read its servers again. `confChanged`: machineadm changed the
 * chrony.conf chrony read at its start, which `chronyc reload sources` does not read again.
 */
export function reloadArgv(client: TimeClient, confChanged = false): [string, ...string[]] {
  return client.kind === 'chrony-sources' && !confChanged ? ['chronyc', 'reload', 'sources'] : ['systemctl', 'restart', client.unit];
}
