// Where machineadm keeps its state on each OS when --state-dir does not say.
import { describe, expect, it } from 'vitest';
import { defaultStateDir, STATE_DIR } from '../../src/host/index.ts';

describe('the default state directory', () => {
  it.each([
    [{ ProgramData: 'C:\\ProgramData' }, 'C:\\ProgramData\\machineadm'],
    [{ ProgramData: 'D:\\Data\\' }, 'D:\\Data\\machineadm'],
    [{ PROGRAMDATA: 'E:\\ProgramData' }, 'E:\\ProgramData\\machineadm'],
    // No variable, or one that is not an absolute path with a drive: Windows' own default.
    [{}, 'C:\\ProgramData\\machineadm'],
    [{ ProgramData: '\\ProgramData' }, 'C:\\ProgramData\\machineadm'],
  ])('on Windows is %j\'s %%ProgramData%%\\machineadm: %s, on a drive, never \\var\\lib\\machineadm', (env, expected) => {
    expect(defaultStateDir('windows', env)).toBe(expected);
  });

  it('on Linux is /var/lib/machineadm whatever the environment', () => {
    expect(defaultStateDir('linux', { ProgramData: 'C:\\ProgramData' })).toBe(STATE_DIR);
  });
});
