// A scratch directory that steps take for the live root ("/"), so live steps run against it, while
// every path they touch stays inside it: for live behaviour that cannot be arranged for real here.
import { join } from 'node:path';
import { RootedFileSystem } from '../../src/host/index.ts';

export class LiveLikeFileSystem extends RootedFileSystem {
  override get isLiveRoot(): boolean {
    return true;
  }
  override mapPath(machinePath: string): string {
    return join(this.root, super.mapPath(machinePath));
  }
}
