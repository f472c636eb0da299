// Reading kubeadm's output: which phase failed, whether the failure is worth another attempt, and
// removing the credentials kubeadm prints itself (init prints a join command with a token and,
// with --upload-certs, the certificate key). Pure.

/** Bootstrap tokens, certificate keys and CA pins as kubeadm prints them. */
const PRINTED_SECRETS: readonly RegExp[] = [/\b[a-z0-9]{6}\.[a-z0-9]{16}\b/g, /\b[a-f0-9]{64}\b/g];

export function scrubKubeadmOutput(line: string, known: readonly string[] = []): string {
  let out = line;
  for (const value of known) if (value.length >= 4) out = out.split(value).join('<redacted>');
  for (const pattern of PRINTED_SECRETS) out = out.replace(pattern, '<redacted>');
  return out;
}

export interface KubeadmFailure {
  /** "kubelet-start", "control-plane-prepare/certs"; undefined when kubeadm failed before any phase (bad config, flags). */
  phase: string | undefined;
  /** The phase named by "error execution phase <name>", else the last "[<phase>]" progress prefix. */
  phaseSource: 'error' | 'progress' | undefined;
  /** The error line kubeadm printed (without "error: "), if any. */
  message: string | undefined;
}

const ERROR_PHASE = /error execution phase ([A-Za-z0-9/_-]+):/;
const PROGRESS_PREFIX = /^\[([a-z][a-z0-9/-]*)\] /;

export function parseKubeadmFailure(lines: readonly string[]): KubeadmFailure {
  for (let i = lines.length - 1; i >= 0; i--) {
    const match = ERROR_PHASE.exec(lines[i]!);
    if (match) return { phase: match[1], phaseSource: 'error', message: lines[i]!.replace(/^error: /, '').trim() };
  }
  let lastPrefix: string | undefined;
  for (const line of lines) {
    const match = PROGRESS_PREFIX.exec(line);
    if (match) lastPrefix = match[1];
  }
  const errorLine = [...lines].reverse().find((l) => l.trim() !== '' && !/^To see the stack trace/.test(l) && !PROGRESS_PREFIX.test(l));
  return { phase: lastPrefix, phaseSource: lastPrefix ? 'progress' : undefined, message: errorLine?.replace(/^error: /, '').trim() };
}

// Failures another attempt can fix: the API server or kubelet not reachable or not ready yet.
const TRANSIENT = [
  /connection refused/i,
  /i\/o timeout/i,
  /no route to host/i,
  /connection reset/i,
  /TLS handshake timeout/i,
  /context deadline exceeded/i,
  /timed out waiting/i,
  /abort connecting to API servers after timeout/i,
  /kubelet is not healthy/i,
  /the kubelet .*(not running|unhealthy)/i,
  /\bEOF\b/,
  /temporary failure in name resolution/i,
];
/** kubelet-start refuses a node name a Ready node already has: another machine is registered under it. */
export const NODE_NAME_TAKEN = /a Node with name .* already exists in the cluster/;

// Failures that are the same on every attempt: preflight errors, credentials, configuration.
const PERMANENT = [
  /\[ERROR /,
  /JWS signature/i,
  /invalid discovery token CA certificate hash|public key .* not pinned|unknown hash format|invalid hash/i,
  /unauthorized|forbidden/i,
  /unknown field|strict decoding|cannot unmarshal|is not valid|Invalid value|Required value/i,
  /can not mix|unknown flag|unknown shorthand flag/i,
  NODE_NAME_TAKEN,
];

/** Whether another attempt (after `kubeadm reset -f`) may succeed. */
export function isTransient(failure: KubeadmFailure, output: readonly string[], timedOut: boolean): boolean {
  if (timedOut) return true;
  // No phase means kubeadm stopped at its configuration or flags: the same input fails again.
  if (failure.phase === undefined || failure.phaseSource !== 'error') return false;
  const text = [failure.message ?? '', ...output.slice(-20)].join('\n');
  if (PERMANENT.some((p) => p.test(text))) return false;
  if (['kubelet-start', 'kubelet-wait-bootstrap', 'wait-control-plane'].includes(failure.phase)) return true;
  return TRANSIENT.some((p) => p.test(text));
}
