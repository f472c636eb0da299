// spec.windows: Windows-only preparation (domain join, features).
import { object, optional, secret, string } from './dsl.ts';

export const windowsSection = object({
  domainJoin: optional(
    object(
      {
        domain: optional(string({ minLength: 1 })),
        organizationalUnit: optional(string()),
        credentials: optional(object({ username: string({ minLength: 1 }), password: secret() })),
        offlineBlob: optional(object({ file: string({ minLength: 1 }) })),
      },
      {
        check: (v, report) => {
          if (v.offlineBlob === undefined && v.domain === undefined) report([], 'give either domain (online join) or offlineBlob (djoin)');
          if (v.offlineBlob !== undefined && v.domain !== undefined) report([], 'give either domain or offlineBlob, not both');
        },
      },
    ),
  ),
});
