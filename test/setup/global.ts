// Runs once before the suites: nothing machine-changing; suites that need the built binary build
// it through test/support/binary.ts.
export default function setup(): void {
  process.env.MACHINEADM_TEST = '1';
}
