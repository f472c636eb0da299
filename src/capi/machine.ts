// KubeadmConfigSpec's machine preparation (commands, files, users, time servers, disks, mounts,
// Ignition's extra configuration) read into machineadm's spec.
import { load as loadYaml, YAML11_SCHEMA } from 'js-yaml';
import { formatPath, isPlainObject } from '../config/schema/dsl.ts';
import type { TrackedDocument, Path } from './tracked.ts';
import { azureNameFill, fileTemplates, hasTemplate, newHereDocuments, shellTemplates } from './templates.ts';
import { answerRoleTests, roleTestNote } from './role-tests.ts';
import { referenceForSecret, whereToPut, type SecretMapping } from './secret-mapping.ts';

type Json = Record<string, unknown>;

const setIf = (target: Json, key: string, value: unknown) => {
  if (value !== undefined) target[key] = value;
};

const TEMPLATE_HINT = "machineadm reads a template of one key of cloud-init's instance data ({{ ds.meta_data.NAME }}, {{ v1.NAME }}) from the machine, and expands nothing else: write the value";

// cloud-init runs bootcmd and runcmd, Ignition its units and kubeadm.sh, without a time limit; a
// provider's install script (packages, downloads, image pulls) may take long. machineadm stops a
// command after its timeoutSeconds (300 unless given): an imported one gets the most the schema
// allows (src/config/schema/commands.ts).
const LONGEST_TIMEOUT_SECONDS = 86_400;

/**
 * A list of commands as the bootstrap data runs it, on Linux: one shell script, so that what one
 * line sets (a variable, `set -e`, a `cd`) holds for the next. cloud-init writes runcmd as a
 * `#!/bin/sh` script of the lines, without `set -e` (a failed line does not stop the next, the
 * last line's status is the script's); Ignition's kubeadm.sh begins with `set -e`. On Windows
 * each line stays a command of its own.
 */
/** The unit CABPK's Ignition runs kubeadm from (kubeadm.sh) on Flatcar. */
const CABPK_KUBEADM_UNIT = 'kubeadm.service';

// Where CABPK writes kubeadm's configuration: cloud-init (init, join) and Ignition.
const CABPK_KUBEADM_FILES = ['/run/kubeadm/kubeadm.yaml', '/run/kubeadm/kubeadm-join-config.yaml', '/etc/kubeadm.yml'];
// A template's edit of it that only puts the machine's values in (Flatcar's envsubst of
// $COREOS_EC2_HOSTNAME and the like), which machineadm does from { fromMachine } itself.
const VALUE_EDIT = /^\s*(envsubst\s*<\s*(\S+)\s*>\s*\2\.tmp|(?:mv|cp)\s+(\S+)\.tmp\s+\3)\s*$/;

/**
 * A line that works on CABPK's kubeadm configuration file, which machineadm does not write (it
 * renders kubeadm's configuration itself): dropped with a note when it only puts the machine's
 * values in, else refused.
 */
function kubeadmFileEdit(doc: TrackedDocument, at: Path, line: string): boolean {
  const file = CABPK_KUBEADM_FILES.find((f) => line.includes(f));
  if (file === undefined) return false;
  const fill = azureNameFill(line);
  if (fill) doc.notes.push({ path: formatPath(at), message: `puts the VM's name from Azure's metadata service into ${file} in place of ${fill.placeholder}: machineadm names the node { fromMachine: instanceName }, read from the same service: dropped` });
  else if (VALUE_EDIT.test(line)) doc.notes.push({ path: formatPath(at), message: `puts the machine's values into ${file}, CABPK's kubeadm configuration, which machineadm does not write: machineadm fills them itself ({ fromMachine }): dropped` });
  else doc.refuse(at, `works on ${file}, CABPK's kubeadm configuration, which machineadm does not write (it renders kubeadm's configuration from spec.kubernetes)`, 'put the change in spec.kubernetes instead: node (name, labels, taints, providerID), kubeletExtraArgs, controlPlane.apiServer, controllerManager or scheduler extraArgs, or a kubeadm patch in patchesDirectory');
  return true;
}

function commandList(doc: TrackedDocument, path: Path, os: 'linux' | 'windows', ignition: boolean, bootstrap: 'init' | 'join'): Json[] | undefined {
  const all = doc.strings(path);
  if (all === undefined) return undefined;
  const lines = all
    .map((line, i) => {
      const at = [...path, i];
      const answered = os === 'linux' ? answerRoleTests(line, bootstrap) : undefined;
      if (answered !== undefined) doc.notes.push({ path: formatPath(at), message: roleTestNote(bootstrap) });
      return { line: answered ?? line, at };
    })
    .filter(({ line, at }) => !kubeadmFileEdit(doc, at, line));
  if (os === 'windows') {
    return lines.flatMap(({ line, at }) => {
      if (!hasTemplate(line)) return [{ shell: line, timeoutSeconds: LONGEST_TIMEOUT_SECONDS }];
      doc.refuse(at, `holds a cloud-init template (${line.slice(0, 60)})`, TEMPLATE_HINT);
      return [];
    });
  }
  // A known template becomes a variable the script gets from the machine (see shellTemplates).
  // Every line is read, for the here-documents a line opens: their bodies may be the next lines.
  const env: Json = {};
  const heredocs = newHereDocuments();
  const kept = lines.flatMap(({ line, at }) => {
    const rendered = shellTemplates(line, heredocs);
    if ('problem' in rendered) {
      doc.refuse(at, `${rendered.problem}: ${line.slice(0, 60)}`, TEMPLATE_HINT);
      return [];
    }
    Object.assign(env, rendered.env);
    return [rendered.text];
  });
  if (kept.length === 0) return [];
  const list = String(path.at(-1));
  const boot = list === 'bootCommands';
  const name = ignition ? `${list}, one script as Ignition's kubeadm.sh runs it (set -e)` : `${list}, one script as cloud-init's ${boot ? 'bootcmd' : 'runcmd'} runs it`;
  // cloud-init's runcmd goes on to kubeadm whatever the last line of preKubeadmCommands returned
  // (no set -e), and a failing bootcmd script fails its module only: cloud-init goes on to runcmd.
  // machineadm would stop at the script's status. A line that fails under a set -e of the list's
  // own still ends the pre script before the exit 0, as it ends runcmd before kubeadm.
  const end = (list === 'preKubeadmCommands' || boot) && !ignition ? ['exit 0'] : [];
  // cloud-init runs bootcmd with INSTANCE_ID, the instance's id: the same value, from its file.
  if (boot && !ignition && env.INSTANCE_ID === undefined && kept.some((line) => /\$\{?INSTANCE_ID\b/.test(line))) env.INSTANCE_ID = { fromInstanceData: 'v1.instance_id' };
  return [{ name, shell: [...(ignition ? ['set -e'] : []), ...kept, ...end].join('\n'), ...(Object.keys(env).length > 0 ? { env } : {}), timeoutSeconds: LONGEST_TIMEOUT_SECONDS }];
}

/**
 * Whether a script reads a variable before it assigns it (a script that sets it first, as
 * Nutanix's postKubeadmCommands set their version variables again, does not need the value).
 */
function usedBeforeSet(script: string, name: string): boolean {
  const use = script.search(new RegExp(`\\$\\{?${name}\\b`));
  if (use < 0) return false;
  const set = script.search(new RegExp(`(?:^|[;&|\\s])(?:export\\s+|readonly\\s+|local\\s+)?${name}=`));
  return set < 0 || use < set;
}

/** Shell variables a script assigns (NAME=..., export NAME=...). */
function assigned(lines: readonly string[]): Set<string> {
  return new Set(lines.flatMap((l) => [...l.matchAll(/(?:^|[;&|\s])(?:export\s+|readonly\s+|local\s+)?([A-Za-z_][A-Za-z0-9_]*)=/g)].map((m) => m[1]!)));
}

function commands(doc: TrackedDocument, base: Path, os: 'linux' | 'windows', spec: Json, bootstrap: 'init' | 'join'): void {
  const out: Json = {};
  const ignition = doc.peek([...base, 'format']) === 'ignition';
  // CABPK writes bootCommands as cloud-config's bootcmd; cloudbase-init has no plugin for it (its
  // cloud-config plugins: write_files, set_timezone, set_hostname, ntp, groups, users, runcmd) and
  // skips the key, so on Windows these lines never ran: carrying them would run them now.
  if (os === 'windows') doc.note([...base, 'bootCommands'], "cloudbase-init has no bootcmd: these never ran under CABPK on Windows (cloudbase-init skips cloud-config keys it has no plugin for): not carried (a command that should run goes in spec.commands.beforeKubeadm)");
  else setIf(out, 'boot', commandList(doc, [...base, 'bootCommands'], os, ignition, bootstrap));
  // cloud-init's bootcmd runs at every boot; the recipe starts machineadm from runcmd, once per
  // instance, and nothing of machineadm runs at a later boot. (CABPK refuses bootCommands with
  // Ignition.)
  if (os === 'linux' && !ignition && Array.isArray(out.boot) && out.boot.length > 0) doc.notes.push({ path: formatPath([...base, 'bootCommands']), message: "cloud-init runs bootcmd at every boot; machineadm runs spec.commands.boot when it runs (under the cloud-config recipe, whose runcmd starts it once per instance: at the first boot, and after a reboot it asked for), not at the boots after: what must hold at every boot belongs in spec.sysctls, spec.kernelModules, spec.storage.mounts, or a systemd unit written by spec.files" });
  setIf(out, 'beforeKubeadm', commandList(doc, [...base, 'preKubeadmCommands'], os, ignition, bootstrap));
  setIf(out, 'afterKubeadm', commandList(doc, [...base, 'postKubeadmCommands'], os, ignition, bootstrap));
  if (Object.keys(out).length > 0) spec.commands = out;
  // In the bootstrap data kubeadm runs inside the same script: a variable of the commands before
  // it reaches the ones after. machineadm runs kubeadm itself, between two scripts.
  const pre = (doc.peek([...base, 'preKubeadmCommands']) as unknown[] | undefined)?.filter((l): l is string => typeof l === 'string') ?? [];
  const before = assigned(pre);
  const after = doc.peek([...base, 'postKubeadmCommands']);
  if (os === 'linux' && Array.isArray(after) && after.length > 0) {
    const script = after.filter((l): l is string => typeof l === 'string').join('\n');
    const used = [...before].filter((name) => usedBeforeSet(script, name));
    if (used.length > 0) doc.notes.push({ path: formatPath([...base, 'postKubeadmCommands']), message: `uses ${used.map((n) => `$${n}`).join(', ')}, set by preKubeadmCommands: machineadm runs kubeadm between the two scripts, so set ${used.length > 1 ? 'them' : 'it'} again in postKubeadmCommands` });
    // Ignition's scripts both begin with set -e: only the others matter there.
    const kept = SHELL_STATE.filter((s) => !(ignition && s.what === 'set -e') && pre.some((l) => s.test.test(l))).map((s) => s.what);
    const them = kept.length > 1 ? 'them' : 'it';
    if (kept.length > 0) doc.notes.push({ path: formatPath([...base, 'postKubeadmCommands']), message: `preKubeadmCommands say ${kept.join(', ')}, which in CABPK's one script ${kept.length > 1 ? 'hold' : 'holds'} for these lines too: machineadm runs kubeadm between the two scripts, and this one starts without ${them} (in machineadm's working directory and umask, without set -e): say ${them} again at the top of postKubeadmCommands if these lines need ${them}` });
  }
}

// What a line of a script sets for the lines after it, besides variables: a preKubeadmCommands
// line's holds for the postKubeadmCommands in CABPK's one script. A cd or umask in a subshell,
// ( cd dir && make ), holds only there and is not matched.
const SHELL_STATE: { what: string; test: RegExp }[] = [
  { what: 'set -e', test: /(?:^|[;&|{]|\bthen|\bdo)\s*set\s+(?:-[A-Za-z]*e|-o\s+errexit\b)/m },
  { what: 'cd', test: /(?:^|[;&|{]|\bthen|\bdo)\s*cd(?:\s|;|$)/m },
  { what: 'umask', test: /(?:^|[;&|{]|\bthen|\bdo)\s*umask\s+[0-7ugoa]/m },
];

/** A Windows path as machineadm's files take it (C:\dir\file), from C:/dir/file or c:\dir\file. */
function windowsPath(path: string): string {
  return path[0]!.toUpperCase() + path.slice(1).replaceAll('/', '\\');
}

/**
 * A { secret: { name, key } } the object reads, as the machineadm reference the mapping gives it
 * (the value is read on the machine, never carried in the bootstrap data); a note says where the
 * value goes.
 */
function secretOf(doc: TrackedDocument, path: Path, os: 'linux' | 'windows', mapping: SecretMapping): Json | undefined {
  if (doc.peek(path) === undefined) return undefined;
  const name = doc.string([...path, 'secret', 'name']);
  const key = doc.string([...path, 'secret', 'key']);
  if (name === undefined || key === undefined || !/^[A-Za-z0-9._-]+$/.test(name) || !/^[A-Za-z0-9._-]+$/.test(key)) {
    doc.take(path);
    doc.refuse(path, 'names no Secret (secret.name and secret.key, as Kubernetes names them)', 'give { secret: { name, key } }');
    return undefined;
  }
  const reference = referenceForSecret(name, key, mapping, os);
  doc.notes.push({ path: formatPath(path), message: whereToPut(name, key, reference) });
  return reference;
}

function files(doc: TrackedDocument, base: Path, os: 'linux' | 'windows', spec: Json, mapping: SecretMapping, bootstrap: 'init' | 'join'): void {
  const path = [...base, 'files'];
  const n = doc.length(path);
  const out: Json[] = [];
  for (let i = 0; i < n; i++) {
    const at = [...path, i];
    const file: Json = {};
    const target = doc.string([...at, 'path']);
    // cloud-init would put the machine's value into the path; machineadm's paths take none.
    if (target !== undefined && os === 'linux' && hasTemplate(target)) doc.refuse([...at, 'path'], `${target} holds a cloud-init template, which cloud-init fills in and machineadm's file paths do not`, 'write the path itself');
    else if (target !== undefined) file.path = os === 'windows' && /^[A-Za-z]:[\\/]/.test(target) ? windowsPath(target) : target;
    const written = doc.string([...at, 'content']);
    const encoding = doc.string([...at, 'encoding']);
    // CABPK writes plain content as a YAML literal block (content: |), which ends it with exactly
    // one newline whatever it ended with: that is what cloud-init (or Ignition) writes.
    const content = written !== undefined && encoding === undefined ? endedAsLiteralBlock(written) : written;
    const fromSecret = secretOf(doc, [...at, 'contentFrom'], os, mapping);
    if (fromSecret !== undefined) file.content = fromSecret;
    // CABPK puts the Secret's value into the same content: | block: the file cloud-init (or
    // Ignition) wrote ends with exactly one newline. machineadm reads the value on the machine
    // and writes it byte for byte; an encoded value decodes to the same bytes either way.
    if (fromSecret !== undefined && encoding === undefined) doc.notes.push({ path: formatPath([...at, 'contentFrom']), message: "CABPK writes the Secret's value as a YAML literal block, so the file it made ends with exactly one newline (one added to a value without one, extra ones dropped); machineadm writes the value byte for byte: give it ending with exactly one newline for the same file" });
    const format = doc.string([...at, 'contentFormat']);
    if (format !== undefined) doc.refuse([...at, 'contentFormat'], `${format}: machineadm writes content as it is (no template engine)`, 'render the content before it goes into the configuration');
    if (content !== undefined) {
      // cloud-init renders the templates of CABPK's user data (## template: jinja) before it
      // decodes anything: only plain content holds any it sees.
      const rendered = hasTemplate(content) && encoding === undefined ? fileTemplates(content) : undefined;
      if (rendered !== undefined && os === 'windows') doc.refuse([...at, 'content'], 'holds a cloud-init template', TEMPLATE_HINT);
      else if (rendered !== undefined && 'problem' in rendered) doc.refuse([...at, 'content'], rendered.problem, TEMPLATE_HINT);
      else if (rendered !== undefined) {
        file.content = rendered.text;
        file.values = rendered.values;
      } else file.content = content;
      // A script a command runs (kube-vip's, in the vSphere and Proxmox templates) may test it too.
      const answered = os === 'linux' && encoding === undefined && typeof file.content === 'string' ? answerRoleTests(file.content, bootstrap) : undefined;
      if (answered !== undefined) {
        file.content = answered;
        doc.notes.push({ path: formatPath([...at, 'content']), message: roleTestNote(bootstrap) });
      }
    }
    if (encoding === 'base64' || encoding === 'gzip+base64') file.encoding = encoding;
    else if (encoding !== undefined) doc.refuse([...at, 'encoding'], `${encoding}: machineadm takes content as plain, base64 or gzip+base64`, 'encode the gzip output with base64 and write gzip+base64');
    setIf(file, 'mode', doc.string([...at, 'permissions']));
    const owner = doc.string([...at, 'owner']);
    // A Windows file takes its folder's ACL: Cluster API templates still say root:root there.
    if (owner !== undefined && os === 'windows') doc.notes.push({ path: formatPath([...at, 'owner']), message: `${owner}: a Windows file takes the ACL of its folder; not carried` });
    else setIf(file, 'owner', owner === undefined ? undefined : cloudInitOwner(owner));
    if (doc.boolean([...at, 'append']) === true) file.append = true;
    out.push(file);
  }
  if (out.length > 0) spec.files = out;
}

/**
 * A write_files owner as cloud-init applies it (util.extract_usergroup, then chown): a user or
 * group left out (empty, "-1" or "none") is not changed, so the file it has just written as root
 * keeps root there. machineadm's owner alone ("ops") would mean the group ops.
 */
function cloudInitOwner(owner: string): string {
  const colon = owner.indexOf(':');
  const [user, group] = colon === -1 ? [owner.trim(), undefined] : [owner.slice(0, colon).trim(), owner.slice(colon + 1).trim()];
  const given = (part: string | undefined) => (part === undefined || part === '' || part === '-1' || part.toLowerCase() === 'none' ? 'root' : part);
  return `${given(user)}:${given(group)}`;
}

/** Text as a YAML literal block with clip chomping reads it back: its trailing newlines made one. */
function endedAsLiteralBlock(text: string): string {
  const body = text.replace(/\n+$/, '');
  return body === '' ? '' : `${body}\n`;
}

function users(doc: TrackedDocument, base: Path, os: 'linux' | 'windows', spec: Json, mapping: SecretMapping): void {
  const path = [...base, 'users'];
  const n = doc.length(path);
  const out: Json[] = [];
  for (let i = 0; i < n; i++) {
    const at = [...path, i];
    // cloudbase-init makes these on Windows (CAPZ's templates: an SSH user in Administrators);
    // machineadm manages local users on Linux only, and a Windows run would refuse them.
    if (os === 'windows') {
      doc.note(at, `${doc.peek([...at, 'name']) ?? 'a user'}: local users are managed on Linux only: not carried (create Windows users in the image, or with a command of spec.commands.boot)`);
      continue;
    }
    const user: Json = { name: doc.string([...at, 'name']) };
    for (const key of ['gecos', 'homeDir', 'shell', 'primaryGroup']) setIf(user, key, doc.string([...at, key]));
    const sudo = doc.string([...at, 'sudo']);
    // CABPK writes sudo unquoted: cloud-init's YAML 1.1 reads false, no, off, null or ~ as no rule
    // (its Ignition writes the text into a sudoers file as it is).
    if (sudo !== undefined && doc.peek([...base, 'format']) !== 'ignition' && NO_SUDO_RULE.test(sudo)) doc.notes.push({ path: formatPath([...at, 'sudo']), message: `"${sudo}" reaches cloud-init as ${/^(null|Null|NULL|~)?$/.test(sudo) ? 'null' : 'false'}, which gives the user no sudo rule: none is written` });
    else setIf(user, 'sudo', sudo);
    const groups = doc.string([...at, 'groups']);
    // cloud-init takes groups as one comma-separated string.
    if (groups !== undefined) user.groups = groups.split(',').map((g) => g.trim()).filter(Boolean);
    setIf(user, 'sshAuthorizedKeys', doc.strings([...at, 'sshAuthorizedKeys']));
    const lock = doc.boolean([...at, 'lockPassword']);
    setIf(user, 'lockPassword', lock);
    if (lock === false) {
      setIf(user, 'passwordHash', doc.string([...at, 'passwd']));
      setIf(user, 'passwordHash', secretOf(doc, [...at, 'passwdFrom'], os, mapping));
    } else lockedPassword(doc, at, user);
    if (doc.boolean([...at, 'inactive']) === true) doc.refuse([...at, 'inactive'], 'an inactive (expired) account has no machineadm equivalent', 'remove the user, or lock its password (lockPassword: true)');
    out.push(user);
  }
  if (out.length > 0) spec.users = out;
  // CABPK's users: takes the place of cloud-init's users: [default], so the image's default user
  // (ubuntu, ec2-user) is not made and gets no SSH key of the cloud's. The recipe's cloud-config
  // lists no users: there cloud-init makes it, with its sudo rule and the cloud's key. Flatcar's
  // core user is there under Ignition either way.
  if (out.length > 0 && doc.peek([...base, 'format']) !== 'ignition') doc.notes.push({ path: formatPath(path), message: "CABPK's cloud-config lists these users without default, so cloud-init makes no default user of the image (ubuntu, ec2-user, ...); under machineadm's cloud-config recipe, which lists no users, cloud-init makes it, with its sudo rule and the cloud's SSH key: add users: [] to the recipe's cloud-config to keep it from being made" });
}

// The plain YAML 1.1 scalars that are false or null, as PyYAML reads them.
const NO_SUDO_RULE = /^(false|False|FALSE|no|No|NO|off|Off|OFF|null|Null|NULL|~|)$/;

/**
 * cloud-init sets a user's passwd and then locks it unless lock_passwd is false (its default is
 * true; CABPK writes lock_passwd only when lockPassword is set): the hash never lets anyone log in.
 * machineadm would set it as a working password (its lockPassword is not applied with a
 * passwordHash), so the hash is left out and the password stays locked.
 */
function lockedPassword(doc: TrackedDocument, at: Path, user: Json): void {
  for (const key of ['passwd', 'passwdFrom']) {
    if (doc.take([...at, key]) === undefined) continue;
    user.lockPassword = true;
    doc.notes.push({ path: formatPath([...at, key]), message: `cloud-init sets this password and locks it (lockPassword is not false), so it never logs anyone in: not carried; the password stays locked (lockPassword: true). For a password that works, set lockPassword: false` });
  }
}

function ntp(doc: TrackedDocument, base: Path, spec: Json): void {
  const path = [...base, 'ntp'];
  const enabled = doc.boolean([...path, 'enabled']);
  const servers = doc.strings([...path, 'servers']);
  if (enabled === false) {
    if (servers !== undefined) doc.notes.push({ path: formatPath([...path, 'servers']), message: 'ntp.enabled is false: the servers are not configured' });
    return;
  }
  // CABPK's Ignition writes the servers into ntp.conf only with enabled: true; cloud-init's
  // enabled defaults to true.
  if (servers !== undefined && enabled !== true && doc.peek([...base, 'format']) === 'ignition') {
    doc.notes.push({ path: formatPath([...path, 'servers']), message: "CABPK's Ignition writes these servers only with ntp.enabled: true: not configured (set enabled: true for machineadm to configure them)" });
    return;
  }
  // ntp: {} (v1beta1): CABPK before v1.11 renders an ntp: section of no servers, which cloud-init
  // sets up; v1.11 and later render none.
  if (servers === undefined && enabled === undefined && isPlainObject(doc.peek(path))) {
    doc.notes.push({ path: formatPath(path), message: "{} gives cloud-init an ntp: section under CABPK before v1.11 (later ones write none), and cloud-init then sets up its NTP client with the distribution's default pools (enabled defaults to true); machineadm leaves the machine's time service as the image has it: give ntp.servers for servers of your own" });
    return;
  }
  if (servers !== undefined) spec.timeServers = { servers };
  else if (enabled === true) doc.notes.push({ path: formatPath([...path, 'enabled']), message: "without servers, cloud-init sets up its NTP client with the distribution's default pools; machineadm leaves the machine's time service as the image has it: give ntp.servers for servers of your own" });
}

/**
 * cloud-init's alias of a datasource's ephemeral disk (ephemeral0) or one of its partitions
 * (ephemeral0.1), as CAPZ's templates name the Azure resource disk; undefined for anything else.
 */
function ephemeralAlias(device: unknown): string | undefined {
  return typeof device === 'string' && /^ephemeral\d+(\.\d+)?$/.test(device) ? device : undefined;
}

const PARTITION_TYPES: Record<string, string> = { Linux: 'linux', LinuxSwap: 'swap', LinuxLVM: 'lvm', LVM: 'lvm' };

function storage(doc: TrackedDocument, base: Path, spec: Json): void {
  const out: Json = {};
  const parts = [...base, 'diskSetup', 'partitions'];
  const disks: Json[] = [];
  for (let i = 0; i < doc.length(parts); i++) {
    const at = [...parts, i];
    const alias = ephemeralAlias(doc.peek([...at, 'device']));
    if (alias !== undefined) {
      doc.refuse([...at, 'device'], `${alias} is a disk only cloud-init names (its datasource's ephemeral disk): machineadm cannot tell which device to partition`, 'name the disk by its path (on Azure, /dev/disk/cloud/azure_resource), or remove the entry: cloud-init partitions a fresh Azure resource disk itself');
      doc.take(at); // its other fields need no refusal of their own
      continue;
    }
    const disk: Json = { device: doc.string([...at, 'device']) };
    const table = doc.string([...at, 'tableType']);
    if (table === 'gpt' || table === 'mbr') disk.table = table;
    else if (table !== undefined) doc.refuse([...at, 'tableType'], `${table}: machineadm writes gpt or mbr tables`);
    const layout = doc.boolean([...at, 'layout']);
    const diskLayout = [...at, 'diskLayout'];
    if (doc.length(diskLayout) > 0) {
      disk.partitions = Array.from({ length: doc.length(diskLayout) }, (_, j) => {
        const p: Json = {};
        setIf(p, 'sizePercent', doc.number([...diskLayout, j, 'percentage']));
        const type = doc.string([...diskLayout, j, 'partitionType']);
        if (type !== undefined) {
          if (PARTITION_TYPES[type]) p.type = PARTITION_TYPES[type];
          else doc.refuse([...diskLayout, j, 'partitionType'], `${type}: machineadm makes Linux, LinuxSwap and LVM partitions`);
        }
        return p;
      });
    } else if (layout === false) {
      doc.refuse([...at, 'layout'], 'false leaves the disk unpartitioned: there is nothing to do', 'remove the entry');
    }
    if (doc.boolean([...at, 'overwrite']) === true) disk.overwrite = true;
    disks.push(disk);
  }
  if (disks.length > 0) out.disks = disks;
  const partitioned = new Set(disks.map((d) => String(d.device)));
  const fsPath = [...base, 'diskSetup', 'filesystems'];
  const filesystems: Json[] = [];
  // Labels only cloud-init would have given (entries on its ephemeral disk, left to it).
  const leftLabels = new Set<string>();
  for (let i = 0; i < doc.length(fsPath); i++) {
    const at = [...fsPath, i];
    const alias = ephemeralAlias(doc.peek([...at, 'device']));
    if (alias !== undefined) {
      const label = doc.string([...at, 'label']);
      if (label !== undefined) leftLabels.add(label);
      doc.note(at, `${alias} is cloud-init's name for a datasource's ephemeral disk${alias.includes('.') ? "'s partition" : ''}, Azure's resource disk on CAPZ: cloud-init's Azure datasource itself formats a fresh one (ext4) and mounts it on /mnt at the first boot, before machineadm runs, so the entry is left to it${label !== undefined ? ` (without the label "${label}")` : ''}; on another cloud, name the device by its path in spec.storage.filesystems`);
      continue;
    }
    const fs: Json = { device: doc.string([...at, 'device']), format: doc.string([...at, 'filesystem']) };
    setIf(fs, 'label', doc.string([...at, 'label']));
    const partition = doc.string([...at, 'partition']) ?? 'any';
    if (/^\d+$/.test(partition)) fs.partition = Number(partition);
    else if (partition === 'any' || partition === 'auto') {
      // cloud-init's default: the first partition of the device (on a disk this configuration
      // partitions, its first partition, still empty), or the device itself when it has none.
      if (partitioned.has(String(fs.device))) {
        fs.partition = 1;
        doc.notes.push({ path: formatPath([...at, 'partition']), message: `${partition === 'any' && doc.peek([...at, 'partition']) === undefined ? "cloud-init's default (any)" : `"${partition}"`} picks the first partition of the disk diskSetup partitions: imported as partition: 1` });
      }
    } else if (partition !== 'none') {
      doc.refuse([...at, 'partition'], `"${partition}" is not a partition number, any, auto or none`);
    }
    setIf(fs, 'options', doc.strings([...at, 'extraOpts']));
    if (doc.boolean([...at, 'overwrite']) === true) fs.overwrite = true;
    if (doc.string([...at, 'replaceFS']) !== undefined) doc.refuse([...at, 'replaceFS'], 'replacing one filesystem type by another has no machineadm equivalent', 'use overwrite: true to format the device whatever it holds');
    filesystems.push(fs);
  }
  if (filesystems.length > 0) out.filesystems = filesystems;
  const mountsPath = [...base, 'mounts'];
  const mounts: Json[] = [];
  for (let i = 0; i < doc.length(mountsPath); i++) {
    const entry = doc.strings([...mountsPath, i]);
    if (entry === undefined) continue;
    // cloud-init's mounts: [device, path, type, options, dump, pass], later ones optional.
    const [device, path, type, options, dump, pass] = entry;
    if (device === undefined || path === undefined) {
      doc.refuse([...mountsPath, i], 'needs at least a device and a mount point', 'e.g. [LABEL=etcd_disk, /var/lib/etcd]');
      continue;
    }
    const label = /^LABEL=(.+)$/.exec(device)?.[1];
    if (ephemeralAlias(device) !== undefined || (label !== undefined && leftLabels.has(label))) {
      doc.refuse([...mountsPath, i], `${device} is a disk only cloud-init names (its ephemeral disk${label !== undefined ? `, labelled by the diskSetup entry left to cloud-init` : ''}): machineadm cannot tell which device it is`, "name the device by its path (on Azure, /dev/disk/cloud/azure_resource-part1 is the resource disk's partition), or leave the mount to cloud-init's own, which puts it on /mnt");
      continue;
    }
    if (path === 'none' || type === 'swap') {
      doc.refuse([...mountsPath, i], 'a swap entry: machineadm makes swap areas but never turns them on (the kubelet refuses to run with swap unless told)', 'remove it, or turn swap on with a boot command if the kubelet is configured for it');
      continue;
    }
    // What cloud-init fills in for the fields an entry leaves out (mount_default_fields on a
    // systemd machine): nofail, so that a missing disk does not stop the boot, and fsck pass 2.
    // Its x-systemd.after=cloud-init.service and _netdev order the mount after cloud-init and the
    // network, which mean nothing without cloud-init: left out, and said.
    const mount: Json = { device, path };
    if (type !== undefined && type !== 'auto') mount.format = type;
    mount.options = options !== undefined ? options.split(',') : ['defaults', 'nofail'];
    mount.dump = Number(dump ?? 0);
    mount.pass = Number(pass ?? 2);
    if (options === undefined) doc.notes.push({ path: formatPath([...mountsPath, i]), message: "takes cloud-init's default options defaults,nofail and fsck pass 2 (without its x-systemd.after=cloud-init.service,_netdev, which order the mount after cloud-init and the network)" });
    mounts.push(mount);
  }
  if (mounts.length > 0) out.mounts = mounts;
  if (Object.keys(out).length > 0) spec.storage = out;
}

/**
 * Ignition's additionalConfig (a Container Linux Config) for files and systemd units, the parts
 * a node's bootstrap uses; anything else in it is refused like any unknown field.
 */
function ignition(doc: TrackedDocument, base: Path, spec: Json): void {
  const path = [...base, 'ignition', 'containerLinuxConfig'];
  doc.note([...path, 'strict'], 'applies to Ignition\'s own translation; machineadm checks its configuration strictly always');
  const text = doc.string([...path, 'additionalConfig']);
  if (text === undefined) return;
  let clc: unknown;
  try {
    // CABPK translates it with the Container Linux Config transpiler, whose YAML parser reads
    // YAML 1.1: `mode: 0744` is octal there (484), where YAML 1.2 reads 744.
    clc = loadYaml(text, { schema: YAML11_SCHEMA });
  } catch (cause) {
    doc.refuse([...path, 'additionalConfig'], `is not YAML: ${(cause as Error).message.split('\n')[0]}`);
    return;
  }
  const where = formatPath([...path, 'additionalConfig']);
  const refuse = (field: string, message: string): void => {
    doc.issues.push({ path: `${where}: ${field}`, message });
  };
  if (!isPlainObject(clc)) return refuse('(document)', 'expected a map');
  const files: Json[] = (spec.files as Json[] | undefined) ?? [];
  const enable: Json[] = [];
  for (const [key, value] of Object.entries(clc)) {
    if (key === 'storage' && isPlainObject(value)) {
      for (const [skey, svalue] of Object.entries(value)) {
        if (skey !== 'files' || !Array.isArray(svalue)) {
          refuse(`storage.${skey}`, 'has no machineadm equivalent (use spec.storage for disks and filesystems)');
          continue;
        }
        svalue.forEach((f: unknown, i) => {
          const contents = isPlainObject(f) && isPlainObject(f.contents) ? f.contents : {};
          if (!isPlainObject(f) || typeof f.path !== 'string' || typeof contents.inline !== 'string' || Object.keys(contents).some((c) => c !== 'inline')) {
            return refuse(`storage.files[${i}]`, 'machineadm takes files with path and contents.inline');
          }
          const extra = Object.keys(f).filter((k) => !['path', 'contents', 'mode', 'filesystem', 'user', 'group'].includes(k));
          if (extra.length > 0) return refuse(`storage.files[${i}].${extra[0]}`, 'has no machineadm equivalent');
          if (f.filesystem !== undefined && f.filesystem !== 'root') return refuse(`storage.files[${i}].filesystem`, 'machineadm writes files on the root filesystem');
          const mode = clcMode(f.mode);
          if (mode === null) return refuse(`storage.files[${i}].mode`, `${JSON.stringify(f.mode)} is not a file mode: give an integer, octal with a leading zero (0644) or decimal (420)`);
          const owner = clcOwner(f.user, f.group);
          if (typeof owner === 'object') return refuse(`storage.files[${i}].${owner.field}`, owner.problem);
          files.push({ path: f.path, content: contents.inline, ...(mode !== undefined ? { mode } : {}), ...(owner !== undefined ? { owner } : {}) });
        });
      }
    } else if (key === 'systemd' && isPlainObject(value) && Array.isArray(value.units) && Object.keys(value).length === 1) {
      value.units.forEach((u: unknown, i) => {
        if (!isPlainObject(u) || typeof u.name !== 'string') return refuse(`systemd.units[${i}]`, 'needs a name');
        const extra = Object.keys(u).filter((k) => !['name', 'enabled', 'enable', 'contents', 'dropins'].includes(k));
        if (extra.length > 0) return refuse(`systemd.units[${i}].${extra[0]}`, 'has no machineadm equivalent');
        // CABPK's own unit on Flatcar, which runs its kubeadm.sh: machineadm is what runs kubeadm
        // there, after containerd (the ordering its drop-ins ask for). Writing or enabling a unit
        // CABPK defines, and machineadm does not, would start nothing or fail the boot commands.
        if (u.name === CABPK_KUBEADM_UNIT) {
          doc.notes.push({ path: `${where}: systemd.units[${i}]`, message: `${CABPK_KUBEADM_UNIT} is the unit that runs kubeadm in CABPK's Ignition; machineadm runs kubeadm itself, after containerd: not written` });
          return;
        }
        if (typeof u.contents === 'string') files.push({ path: `/etc/systemd/system/${u.name}`, content: u.contents });
        if (Array.isArray(u.dropins)) {
          for (const d of u.dropins) if (isPlainObject(d) && typeof d.name === 'string' && typeof d.contents === 'string') files.push({ path: `/etc/systemd/system/${u.name}.d/${d.name}`, content: d.contents });
        }
        if (u.enabled === true || u.enable === true) enable.push(enableUnit(u.name));
      });
    } else {
      refuse(key, 'has no machineadm equivalent (files and systemd units are carried)');
    }
  }
  if (files.length > 0) spec.files = files;
  if (enable.length > 0) {
    // Ignition writes and enables its units before systemd starts anything, so they run at the
    // first boot, before CABPK's kubeadm.service. machineadm writes them in prepare/files, after
    // its boot commands (where `systemctl enable` would find no unit): they are enabled and
    // started in provision, first of the commands before kubeadm, ahead of the
    // preKubeadmCommands script, which may need what they do.
    const commands = (spec.commands as Json | undefined) ?? {};
    commands.beforeKubeadm = [...enable, ...((commands.beforeKubeadm as Json[] | undefined) ?? [])];
    spec.commands = commands;
  }
}

/** The command that enables and starts a unit Ignition enables. */
function enableUnit(unit: string): Json {
  const name = `enable and start ${unit}, as Ignition does`;
  return { ...(name.length <= 100 ? { name } : {}), argv: ['systemctl', 'enable', '--now', unit], timeoutSeconds: LONGEST_TIMEOUT_SECONDS };
}

/**
 * A Container Linux Config file's mode (an integer, which the YAML 1.1 parser reads as octal when
 * written with a leading zero) as machineadm's octal text; undefined when not given, null when it
 * is no mode.
 */
function clcMode(mode: unknown): string | undefined | null {
  if (mode === undefined || mode === null) return undefined;
  if (typeof mode !== 'number' || !Number.isInteger(mode) || mode < 0 || mode > 0o7777) return null;
  return '0' + mode.toString(8).padStart(3, '0');
}

/**
 * A Container Linux Config file's owner ({ id } or { name } of its user and group) as machineadm's
 * user:group. Ignition takes the id before the name, and root (0) for a user or group not given.
 */
function clcOwner(user: unknown, group: unknown): string | undefined | { field: string; problem: string } {
  if (user === undefined && group === undefined) return undefined;
  const part = (x: unknown, field: 'user' | 'group'): string | { field: string; problem: string } => {
    if (x === undefined || x === null) return 'root';
    if (isPlainObject(x) && typeof x.id === 'number' && Number.isInteger(x.id) && x.id >= 0) return String(x.id);
    if (isPlainObject(x) && x.id === undefined && typeof x.name === 'string' && /^[A-Za-z0-9_.-]+$/.test(x.name)) return x.name;
    return { field, problem: `expected { id: NUMBER } or { name: NAME } (a user or group name of letters, digits, ".", "_" and "-")` };
  };
  const u = part(user, 'user');
  const g = part(group, 'group');
  if (typeof u === 'object') return u;
  if (typeof g === 'object') return g;
  return `${u}:${g}`;
}

export function machinePreparation(doc: TrackedDocument, base: Path, os: 'linux' | 'windows', spec: Json, bootstrap: 'init' | 'join', mapping: SecretMapping = { store: 'files' }): void {
  commands(doc, base, os, spec, bootstrap);
  files(doc, base, os, spec, mapping, bootstrap);
  users(doc, base, os, spec, mapping);
  ntp(doc, base, spec);
  storage(doc, base, spec);
  ignition(doc, base, spec);
  doc.note([...base, 'format'], 'says how Cluster API encodes the bootstrap data (cloud-config or Ignition); machineadm\'s recipes deliver the MachineConfig in either');
  doc.note([...base, 'useExperimentalRetryJoin'], 'machineadm always retries a join that fails for a transient reason (spec.kubernetes.retries)');
}
