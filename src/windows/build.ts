// Windows builds by number, and whether a node's build is one the configuration supports.
// Container images carry a Windows build: below 20348 a host runs only images of its own build;
// from 20348 a host runs images from the last LTSC build before its own (20348, or 26100 for a host
// above 26100) up to its own build (hcsshim CheckHostAndContainerCompat, containerd's platform
// matcher). spec.windows.supportedBuilds lists the builds of the images
// the cluster runs, so a host is supported when it can run at least one of them.
const RELEASES: Record<string, string> = {
  '14393': 'ltsc2016',
  '17763': 'ltsc2019',
  '20348': 'ltsc2022',
  '25398': '23H2',
  '26100': 'ltsc2025',
};

/** The release name of a build (ltsc2022 for 20348), or undefined. */
export function windowsRelease(build: string | undefined): string | undefined {
  return build === undefined ? undefined : RELEASES[build];
}

export function describeBuild(build: string | undefined): string {
  if (build === undefined) return 'build unknown';
  const release = windowsRelease(build);
  return release ? `build ${build} (${release})` : `build ${build}`;
}

/** The LTSC builds whose images later builds run (hcsshim's compatLTSCReleases), ascending. */
const COMPAT_LTSC_BUILDS = [20348, 26100];

/** True when a host of this build runs images of `imageBuild`. */
export function hostRunsImage(hostBuild: number, imageBuild: number): boolean {
  if (hostBuild < 20348) return hostBuild === imageBuild;
  // An LTSC host runs the images of the LTSC before it; a later host, those of the last LTSC.
  const oldest = COMPAT_LTSC_BUILDS.filter((ltsc) => ltsc < hostBuild).at(-1) ?? 20348;
  return imageBuild >= oldest && imageBuild <= hostBuild;
}

/** Undefined when supported; else why not. */
export function unsupportedBuild(build: string | undefined, supported: readonly number[] | undefined): string | undefined {
  if (supported === undefined) return undefined;
  const list = supported.map((b) => describeBuild(String(b))).join(', ');
  if (build === undefined || !/^\d+$/.test(build)) return `the Windows build of this machine is unknown, and spec.windows.supportedBuilds lists ${list}`;
  if (supported.some((image) => hostRunsImage(Number(build), image))) return undefined;
  return `this machine is Windows ${describeBuild(build)}, which cannot run container images of ${list} (spec.windows.supportedBuilds)`;
}

/**
 * The oldest Windows build machineadm makes a node of: Windows Server 2022 (20348). Older builds
 * lack what a node here relies on: HostProcess containers and containerd's own Windows support
 * (Kubernetes' Windows documentation lists 2019 with reduced support), and their images only run
 * on the same build.
 */
export const MINIMUM_BUILD = 20348;

/**
 * Windows Server 2019, still in extended support: made a node only when spec.windows.supportedBuilds
 * lists its build, since the cluster must then have images of exactly that build.
 */
export const LISTED_ONLY_BUILD = 17763;

/**
 * Undefined when this build is new enough, or is LISTED_ONLY_BUILD and `supported` lists it (or
 * the build is not known, as in a plan for another machine); else why not.
 */
export function buildTooOld(build: string | undefined, supported?: readonly number[]): string | undefined {
  if (build === undefined || !/^\d+$/.test(build) || Number(build) >= MINIMUM_BUILD) return undefined;
  if (Number(build) === LISTED_ONLY_BUILD && supported?.includes(LISTED_ONLY_BUILD)) return undefined;
  return `this machine is Windows ${describeBuild(build)}; machineadm needs Windows build ${MINIMUM_BUILD} (Windows Server 2022, ltsc2022) or later`;
}

/** What a node of an accepted build below MINIMUM_BUILD goes without, for the plan; undefined otherwise. */
export function buildLacks(build: string | undefined): string | undefined {
  if (build !== String(LISTED_ONLY_BUILD)) return undefined;
  return `accepted because spec.windows.supportedBuilds lists ${LISTED_ONLY_BUILD}: it runs container images of build ${LISTED_ONLY_BUILD} only (a host from ${MINIMUM_BUILD} runs images from ${MINIMUM_BUILD} up to its own build), and Kubernetes gives Windows Server 2019 reduced support`;
}
