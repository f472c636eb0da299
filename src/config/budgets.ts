// Totals one configuration may reach, all its sources together, so that no input, however it is
// shaped, takes machineadm past 256 MiB of memory (docs/contract/configuration.md 3.2). A limit
// per piece (a source, a part, a file) does not bound their product: YAML aliases, MIME parts,
// drop-ins and endpoints multiply pieces. Each number is far above what a real configuration
// needs (a configuration is a few KiB, with tens of values per file it writes), and low enough
// that the largest input they let through stays within the memory promise (measured by
// scripts/hostile-inputs.mjs). Pure: no I/O.

const MiB = 1024 * 1024;

export const BUDGETS = {
  /**
   * Bytes of all sources together: as read, plus what gzip makes of them (a whole source or a
   * MIME part). The most one source may hold (load.ts's MAX_SOURCE_BYTES): parsed, checked and
   * merged, a byte of YAML is held up to six times over (990 drop-ins of 15 KiB took 350 MiB).
   */
  sourceBytes: 8 * MiB,
  /** Configuration files of all sources together: each source, each drop-in of a directory. */
  documents: 1_000,
  /** Parts of all MIME user data together, nested parts and other tools' parts included. */
  mimeParts: 1_000,
  /**
   * Line breaks, escapes (`\` and `''`) and characters that may start a YAML value (`- ? : , [ {`)
   * of all documents together, counted before each is parsed (document.ts's yamlPieces). The
   * parser makes up to two events of about 300 bytes for each such character before anything can
   * be counted, and a string a piece of about 100 bytes per line and escape, kept while the
   * configuration is: this bounds both (about 60 MiB). A configuration written by hand has two to
   * four per line; a file's text in it has its lines and punctuation (gzip+base64 on one line
   * has none).
   */
  yamlPieces: 100_000,
  /**
   * Values (maps, lists, scalars) of all documents together, YAML aliases expanded. A large
   * configuration has a few thousand; each value is held three times (as read, merged, checked),
   * and a wrong one becomes a problem with its position and message.
   */
  values: 20_000,
  /** Text (keys and strings) of all documents together, YAML aliases expanded. */
  textBytes: 16 * MiB,
  /**
   * spec.files inline content, decoded (base64 and gzip undone), all files together, a YAML alias
   * counted each time it is used: the files step holds every inline file at once. The most one
   * file may hold (MAX_INLINE_CONTENT_BYTES).
   */
  inlineContentBytes: 16 * MiB,
  /** spec.report.endpoints: each is a spool, a queue and a connection for every event of a run. */
  endpoints: 16,
} as const;

/** A total went past its budget: the configuration is refused as a whole, before anything changes. */
export class BudgetError extends Error {
  readonly hint: string;
  constructor(message: string, hint: string) {
    super(message);
    this.hint = hint;
  }
}

export const SMALLER_HINT = 'a configuration is a few KiB: give large file contents as source: { url, sha256 }, and split a fleet\'s configurations per machine';

/** What is left of the budgets while one configuration loads; each piece read spends from it. */
export class LoadBudget {
  sourceBytes: number = BUDGETS.sourceBytes;
  documents: number = BUDGETS.documents;
  mimeParts: number = BUDGETS.mimeParts;
  yamlPieces: number = BUDGETS.yamlPieces;
  values: number = BUDGETS.values;
  textBytes: number = BUDGETS.textBytes;

  /** Whether a total has been passed: loading stops there, and the configuration is refused. */
  get exhausted(): boolean {
    return this.sourceBytes < 0 || this.documents < 0 || this.mimeParts < 0 || this.yamlPieces < 0 || this.values < 0 || this.textBytes < 0;
  }

  /** Spends bytes read or inflated; what is left is the most a decompression may still produce. */
  spendBytes(bytes: number): void {
    this.sourceBytes -= bytes;
    if (this.sourceBytes < 0) throw new BudgetError(`the sources hold more than ${formatMiB(BUDGETS.sourceBytes)} together (as read, gzip undone)`, SMALLER_HINT);
  }

  /** Spends the documents a file or a directory's drop-ins are about to add, before any is read. */
  spendDocuments(count: number): void {
    this.documents -= count;
    if (this.documents < 0) {
      throw new BudgetError(`more than ${BUDGETS.documents} configuration files, all sources together${count > 1 ? ` (this directory holds ${count})` : ''}`, 'a machine needs a handful of drop-ins: merge them into fewer files');
    }
  }

  spendMimePart(): void {
    if (--this.mimeParts < 0) throw new BudgetError(`user data with more than ${BUDGETS.mimeParts} MIME parts`, 'cloud-init user data has a few parts: put the MachineConfig in one part');
  }
}

export function formatMiB(bytes: number): string {
  return `${bytes / MiB} MiB`;
}
