// spec.windows: Windows-only preparation. The domain join is spec.domainJoin, for both systems.
import { object } from './dsl.ts';

export const windowsSection = object({});
