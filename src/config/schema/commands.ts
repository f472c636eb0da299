// spec.commands: the operator's own commands, at three points of a run (boot, before and after
// kubeadm) and at the start of `machineadm reset`, each an argv or one shell line with a timeout.
import { array, integer, object, optional, record, string, withDefault } from './dsl.ts';
import { machineString } from './machine.ts';

const oneLine = (what: string) => (value: string) => (/[\r\n\0]/.test(value) ? `${what} must be one line|remove the line break` : undefined);

export const DEFAULT_COMMAND_TIMEOUT_SECONDS = 300;

export const commandSpec = object(
  {
    name: optional(string({ minLength: 1, maxLength: 100, check: oneLine('a name'), description: 'what the command is for, shown in plan, events and errors, e.g. "mount the etcd disk"', example: 'mount the etcd disk' })),
    argv: optional(
      array(string({ check: (v) => (v.includes('\0') ? 'contains a NUL character' : undefined) }), {
        minItems: 1,
        description: 'the program and its arguments, run without a shell, e.g. ["/usr/bin/systemctl", "restart", "kubelet"]', example: ['/usr/bin/systemctl', 'restart', 'kubelet'],
      }),
    ),
    shell: optional(
      string({
        minLength: 1,
        check: (v) => (v.includes('\0') ? 'contains a NUL character' : undefined),
        description: 'one shell line (may hold several lines), run by /bin/sh -c on Linux and by powershell.exe -NoProfile -NonInteractive -Command on Windows, e.g. "echo ready > /run/ready"', example: 'echo ready > /run/ready',
      }),
    ),
    env: optional(
      record(machineString(string({ check: (v) => (/[\r\n\0]/.test(v) ? 'must be one line, without NUL|remove the line break' : undefined) })), {
        key: { pattern: /^[A-Za-z_][A-Za-z0-9_]*$/, patternHint: 'a variable name: letters, digits and _, not starting with a digit, e.g. NODE_NAME' },
      }),
      {
        description: 'environment variables the command gets, each a literal, { fromMachine: NAME } or { fromInstanceData: KEY } (this machine\'s value, e.g. its local host name); a shell line reads them as "$NAME"',
        example: { NODE_NAME: { fromMachine: 'localHostname' } },
      },
    ),
    timeoutSeconds: withDefault(
      integer({ min: 1, max: 86_400, description: 'seconds before the command and every process it started are stopped (TERM, then KILL) and the step fails, e.g. 60', example: 60 }),
      DEFAULT_COMMAND_TIMEOUT_SECONDS,
    ),
  },
  {
    check: (c, report) => {
      if ((c.argv === undefined) === (c.shell === undefined)) report([], 'give exactly one of argv or shell', 'argv: ["program", "arg"] runs without a shell; shell: "a | b" runs one shell line');
      if (c.argv !== undefined && c.argv[0] === '') report(['argv', 0], 'the program must not be empty');
    },
  },
);

const commandList = (description: string, example: unknown) => optional(array(commandSpec, { description, example }));

export const commandsSection = object(
  {
    boot: commandList('run early in prepare, on every machineadm run (cloud-init bootcmd\'s place), in order; a failing one stops the run', [{ argv: ['/sbin/swapoff', '-a'] }]),
    beforeKubeadm: commandList('run in provision right before kubeadm init or join, until that kubeadm has succeeded on this machine', [{ name: 'keepalived', shell: 'systemctl enable --now keepalived' }]),
    afterKubeadm: commandList('run in provision right after kubeadm init or join succeeded, once per successful kubeadm run', [{ shell: 'mkdir -p /root/.kube && cp /etc/kubernetes/admin.conf /root/.kube/config', timeoutSeconds: 30 }]),
    beforeReset: commandList(
      'run by machineadm reset before it undoes anything (what the other lists did cannot be undone by machineadm: undo it here), on every reset run, in order; a failing one stops the reset before any change. Taken from the configuration reset is given (-c, or the default sources)',
      [{ name: 'drain local data', argv: ['/usr/local/sbin/node-teardown', '--keep-logs'], timeoutSeconds: 120 }],
    ),
  },
  { description: 'the operator\'s commands at three points of a run and before a reset, e.g. { boot: [{ argv: ["/sbin/swapoff", "-a"] }] }; each is an argv or a shell line with a timeout', example: { boot: [{ argv: ['/sbin/swapoff', '-a'] }] } },
);
