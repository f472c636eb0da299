// Partition layouts: what spec.storage.disks[i] asks for on a disk of a given size, the sfdisk
// script that writes it, and whether a table sfdisk read back is that layout. Pure: no device is
// touched here.
import type { DiskSpec } from '../../config/schema/index.ts';

const MiB = 1024 * 1024;

export type PartitionType = DiskSpec['partitions'][number]['type'];

// sfdisk's own shortcuts (L, S, V) mean the same type in GPT and MBR tables; the codes are what
// `sfdisk --json` reads back: a GUID for GPT, a hex byte for MBR (sfdisk calls it "dos").
const TYPES: Record<PartitionType, { script: string; gpt: string; dos: string }> = {
  linux: { script: 'L', gpt: '0FC63DAF-8483-4772-8E79-3D69D8477DE4', dos: '83' },
  swap: { script: 'S', gpt: '0657FD6D-A4AB-43C4-84E5-0933C84B4F4F', dos: '82' },
  lvm: { script: 'V', gpt: 'E6D6D379-F507-44C2-A23C-238F2A3DF928', dos: '8e' },
};

export interface PlannedPartition {
  number: number;
  type: PartitionType;
  /** Undefined for the partition that takes the rest of the disk. */
  sizeMiB?: number;
  /** What the layout gives it, in bytes (the rest: up to the end of the disk). */
  bytes: number;
}

export interface Layout {
  table: 'gpt' | 'dos';
  partitions: PlannedPartition[];
}

/** The kernel's name for partition N of a disk: sdb -> sdb1, nvme0n1 / loop0 / mmcblk0 -> ...p1. */
export function partitionPath(disk: string, number: number): string {
  return /\d$/.test(disk) ? `${disk}p${number}` : `${disk}${number}`;
}

/**
 * The layout on a disk of `sizeBytes`: each sizePercent rounded down to whole MiB (sfdisk aligns
 * partitions to 1 MiB), the first starting at 1 MiB. The last partition takes the rest when it has
 * no sizePercent, or when its share would pass the end of the disk (the table's own sectors are
 * not part of any share). Returns a problem when the disk is too small for the layout.
 */
export function planLayout(disk: DiskSpec, sizeBytes: number): Layout | { problem: string } {
  const table = disk.table === 'mbr' ? 'dos' : 'gpt';
  // GPT keeps a copy of its table in the last 33 sectors; 1 MiB more keeps the arithmetic simple.
  const end = Math.floor(sizeBytes / MiB) - (table === 'gpt' ? 1 : 0);
  let start = 1;
  const partitions: PlannedPartition[] = [];
  for (const [i, p] of disk.partitions.entries()) {
    const last = i === disk.partitions.length - 1;
    const share = p.sizePercent === undefined ? undefined : Math.floor((sizeBytes * p.sizePercent) / 100 / MiB);
    if (share !== undefined && share < 1) return { problem: `partition ${i + 1} (${p.sizePercent}%) would be smaller than 1 MiB on this ${formatBytes(sizeBytes)} disk` };
    if (share === undefined || (last && start + share > end)) {
      if (end - start < 1) return { problem: `no room is left for partition ${i + 1} on this ${formatBytes(sizeBytes)} disk` };
      partitions.push({ number: i + 1, type: p.type, bytes: (end - start) * MiB });
      break;
    }
    if (start + share > end) return { problem: `partition ${i + 1} (${p.sizePercent}%) does not fit on this ${formatBytes(sizeBytes)} disk` };
    partitions.push({ number: i + 1, type: p.type, sizeMiB: share, bytes: share * MiB });
    start += share;
  }
  return { table, partitions };
}

/** The script `sfdisk DISK` reads on its standard input to write the layout. */
export function sfdiskScript(layout: Layout): string {
  const lines = [`label: ${layout.table}`];
  for (const p of layout.partitions) lines.push(`${p.sizeMiB === undefined ? '' : `size=${p.sizeMiB}MiB, `}type=${TYPES[p.type].script}`);
  return lines.join('\n') + '\n';
}

export interface PartitionTable {
  label: string;
  sectorSize: number;
  partitions: { node: string; start: number; size: number; type: string }[];
}

/** `sfdisk --json DISK`'s output, or undefined when it is not that. */
export function parseSfdiskJson(text: string): PartitionTable | undefined {
  try {
    const doc = JSON.parse(text) as { partitiontable?: { label?: string; sectorsize?: number; partitions?: { node?: string; start?: number; size?: number; type?: string }[] } };
    const t = doc.partitiontable;
    if (!t?.label) return undefined;
    return {
      label: t.label,
      sectorSize: t.sectorsize ?? 512,
      partitions: (t.partitions ?? []).map((p) => ({ node: p.node ?? '', start: p.start ?? 0, size: p.size ?? 0, type: String(p.type ?? '') })),
    };
  } catch {
    return undefined;
  }
}

/**
 * Why an existing table is not the layout asked for, or undefined when it is: the same table type,
 * number and types of partitions, and sizes within 1% of the disk (another tool that wrote the
 * same layout rounds differently).
 */
export function tableDifference(existing: PartitionTable, layout: Layout, sizeBytes: number): string | undefined {
  if (existing.label !== layout.table) return `it has ${withArticle(`${describeLabel(existing.label)} partition table`)}, not ${describeLabel(layout.table)}`;
  if (existing.partitions.length !== layout.partitions.length) return `it has ${existing.partitions.length} partition${existing.partitions.length === 1 ? '' : 's'}, not ${layout.partitions.length}`;
  const slack = Math.max(MiB, sizeBytes / 100);
  for (const [i, want] of layout.partitions.entries()) {
    const have = existing.partitions[i]!;
    const code = TYPES[want.type][layout.table];
    if (have.type.toLowerCase() !== code.toLowerCase()) return `partition ${want.number} has type ${have.type}, not ${want.type} (${code})`;
    const bytes = have.size * existing.sectorSize;
    if (Math.abs(bytes - want.bytes) > slack) return `partition ${want.number} is ${formatBytes(bytes)}, not ${formatBytes(want.bytes)}`;
  }
  return undefined;
}

/** "an ext4 filesystem", "an MBR partition table", "a GPT ...": by the sound of the first letter. */
export function withArticle(words: string): string {
  return `${/^([aeiouAEIOU]|x|ntfs|[FHLMNRSX][A-Z0-9])/.test(words) ? 'an' : 'a'} ${words}`;
}

function describeLabel(label: string): string {
  return label === 'dos' ? 'MBR' : label.toUpperCase();
}

export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${Number.isInteger(value) ? value : value.toFixed(1)} ${units[unit]}`;
}

/** One line for a plan: "1: 25% linux (2 GiB), 2: rest swap". Sizes only when the disk's size is known. */
export function describeLayout(disk: DiskSpec, layout?: Layout): string {
  const table = disk.table === 'mbr' ? 'MBR' : 'GPT';
  const parts = disk.partitions.map((p, i) => {
    const planned = layout?.partitions[i];
    const share = p.sizePercent === undefined || (planned && planned.sizeMiB === undefined) ? 'rest' : `${p.sizePercent}%`;
    return `${i + 1}: ${share} ${p.type}${planned ? ` (${formatBytes(planned.bytes)})` : ''}`;
  });
  return `${table}, ${parts.join(', ')}`;
}
