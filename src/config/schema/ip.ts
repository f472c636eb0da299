// IP address families, as node:net's isIP tells them (IPv6 with an optional %zone), without
// loading node:net: that module and the stream stack under it cost every validation ~2 ms.

const V4 = /^(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const GROUP = /^[0-9A-Fa-f]{1,4}$/;
const ZONE = /^[0-9A-Za-z.:-]+$/;

function isIPv6(value: string): boolean {
  const percent = value.indexOf('%');
  if (percent >= 0 && !ZONE.test(value.slice(percent + 1))) return false;
  let address = percent >= 0 ? value.slice(0, percent) : value;
  // A dotted IPv4 tail stands for the last two groups.
  if (address.includes('.')) {
    const lastColon = address.lastIndexOf(':');
    if (lastColon < 0 || !V4.test(address.slice(lastColon + 1))) return false;
    address = `${address.slice(0, lastColon + 1)}0:0`;
  }
  const halves = address.split('::');
  if (halves.length > 2) return false;
  const groups = halves.map((half) => (half === '' ? [] : half.split(':')));
  if (!groups.every((g) => g.every((group) => GROUP.test(group)))) return false;
  const count = groups.reduce((sum, g) => sum + g.length, 0);
  // "::" stands for one group or more.
  return halves.length === 2 ? count <= 7 : count === 8;
}

/** 4 or 6 for an IPv4 or IPv6 address, 0 for anything else. */
export function ipFamily(value: string): 0 | 4 | 6 {
  if (V4.test(value)) return 4;
  return isIPv6(value) ? 6 : 0;
}
