// src/linux: Linux host preparation: kernel modules, sysctls, disks and mounts, and files. The pure parts (file
// formats, key rules, diffs) sit at the top; steps/ holds the prepare steps, which touch the
// machine only through Host.
export { kernelModulesLoadStep } from './steps/kernel-modules-load.ts';
export { kernelModulesFileStep } from './steps/kernel-modules-file.ts';
export { sysctlsApplyStep } from './steps/sysctls-apply.ts';
export { sysctlsFileStep } from './steps/sysctls-file.ts';
export { filesStep } from './steps/files.ts';
export { storagePartitionsStep, storageFilesystemsStep, storageMountsStep, storageFstabStep } from './steps/storage.ts';
export { unifiedDiff, redactSecrets } from './diff.ts';
