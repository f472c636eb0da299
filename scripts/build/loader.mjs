// The SEA main script: the loader that runs the pieces of the bundle (SEA assets inside the
// executable, files beside it outside), and its build-time variant that writes their code caches.

/** The name of the asset holding every piece a start runs (the entry, commander, the command options). */
export const START_PIECE = 'machineadm-start.js';

/**
 * The SEA main script: a loader. Inside the executable a piece is the SEA asset of its name, and
 * V8's code cache for it the asset "<name>.cache"; outside it (the build's own tests run this
 * script with node), the files of those names in the pieces folder beside the script. A cache V8
 * cannot use (the executable of another platform) is ignored, and the piece is compiled from its
 * source. `producing` (at build time only, never shipped) makes the loader that runs a command
 * once and writes the code caches of the pieces it ran, with the functions the run compiled.
 */
export function mainScript({ producing }) {
  return `"use strict";
const machineadmSea = require("node:sea");
function machineadmAsset(name) {
  // The pieces are ASCII: their bytes are the characters (latin1 copies them, UTF-8 would decode).
  if (machineadmSea.isSea()) return { source: Buffer.from(machineadmSea.getRawAsset(name)).toString("latin1"), cachedData: new Uint8Array(machineadmSea.getRawAsset(name + ".cache")) };
  const file = require("node:path").join(module.path, "pieces", name);
  return { source: require("node:fs").readFileSync(file, "utf8"), cachedData: ${producing ? 'machineadmEarlierCache(file)' : 'require("node:fs").readFileSync(file + ".cache")'} };
}
${producing ? PRODUCING : ''}// The start piece is a script whose value is the pieces every start runs, by id; any other piece is
// a script whose value is a function (exports, require, module): compiled as stored, the source is
// not copied into a new string first.
function machineadmRun(name) {
  const { source, cachedData } = machineadmAsset(name);
  const script = new (require("node:vm").Script)(source, { filename: "machineadm/" + name, cachedData });${producing ? '\n  machineadmRan.push([name, script]);' : ''}
  return script.runInThisContext();
}
const machineadmInStart = machineadmRun(${JSON.stringify(START_PIECE)});
const machineadmLoaded = new Map();
function machineadmRequire(id) {
  if (!id.startsWith("./")) return require(id);
  let loaded = machineadmLoaded.get(id);
  if (loaded) return loaded.exports;
  const body = machineadmInStart[id] ?? machineadmRun(id.slice(2));
  loaded = { exports: {} };
  machineadmLoaded.set(id, loaded);
  body.call(loaded.exports, loaded.exports, machineadmRequire, loaded);
  return loaded.exports;
}
machineadmRequire("./bin.js");
`;
}

export const PIECE_HEAD = '(function (exports, require, module) {';
export const PIECE_TAIL = '\n})';

// V8 finishes compiling in the background after the run: the caches are written once two rounds
// taken 100 ms apart are the same bytes, so that two builds write the same. A run starts from the
// caches the earlier runs wrote, so the cache it writes holds their functions and its own.
const PRODUCING = `const machineadmRan = [];
function machineadmEarlierCache(file) {
  return require("node:fs").existsSync(file + ".cache") ? require("node:fs").readFileSync(file + ".cache") : undefined;
}
function machineadmSettle(previous, tries) {
  setTimeout(() => {
    const caches = machineadmRan.map(([name, script]) => [name, script.createCachedData()]);
    if (!(previous && caches.every(([, data], i) => data.equals(previous[i][1]))) && tries < 50) return machineadmSettle(caches, tries + 1);
    for (const [name, data] of caches) {
      const file = require("node:path").join(module.path, "pieces", name + ".cache");
      require("node:fs").writeFileSync(file, data);
    }
  }, 100);
}
process.once("beforeExit", () => machineadmSettle(undefined, 0));
`;
