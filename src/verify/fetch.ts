// Verified downloads: stream to a temporary file while hashing, check, and only then rename into
// place. Used by `machineadm fetch`, files[].source and anything else that downloads.
import type { Host } from '../host/index.ts';
import { NotAvailableError } from '../errors.ts';

export interface FetchRequest {
  /** Tried in order: the first is the primary location, the rest mirrors. */
  urls: string[];
  /** Machine path (under --root) where the verified file goes. */
  destination: string;
  sha256?: string;
  /** A minisign signature at this URL, checked with this public key (base64). */
  signature?: { url: string; publicKey: string };
  mode?: number;
  owner?: string;
}

export interface FetchResult {
  sha256: string;
  bytes: number;
  url: string;
}

export async function fetchVerified(_host: Host, _request: FetchRequest): Promise<FetchResult> {
  throw new NotAvailableError('verified downloads are not available in this build yet');
}
