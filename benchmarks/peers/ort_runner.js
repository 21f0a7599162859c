#!/usr/bin/env node
// ONNX Runtime's side of the peer benchmark (docs/peer-benchmarks.md). Same
// command line and JSON line as bench_network_runner and torch_runner.py:
//
//   node ort_runner.js MODEL.onnx INPUT.npy --threads N --warmup W --reps R
//       [--max-seconds S] [--save-output OUT.npy] [--no-spin]
//
// Session: CPU execution provider, intraOpNumThreads = N, interOpNumThreads = 1,
// sequential execution, graphOptimizationLevel 'all', everything else at
// ONNX Runtime's defaults (memory arena and thread spinning on; --no-spin sets
// session.intra_op.allow_spinning = 0, the counterpart of OMP_WAIT_POLICY=PASSIVE).
'use strict';

const fs = require('fs');
const path = require('path');

function usage(why) {
  process.stderr.write(`ort_runner: ${why}\nusage: node ort_runner.js MODEL.onnx INPUT.npy ` +
                       '--threads N --warmup W --reps R [--max-seconds S] [--save-output OUT.npy] ' +
                       '[--no-spin]\n');
  process.exit(2);
}

function parseArgs(argv) {
  const a = {threads: 1, warmup: 3, reps: 10, maxSeconds: 0, saveOutput: '', spin: true};
  const positional = [];
  for (let i = 0; i < argv.length; ++i) {
    const s = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) usage(`${s} needs a value`);
      return argv[++i];
    };
    const number = () => {
      const v = Number(value());
      if (!Number.isFinite(v)) usage(`bad number after ${s}`);
      return v;
    };
    if (s === '--threads') a.threads = number();
    else if (s === '--warmup') a.warmup = number();
    else if (s === '--reps') a.reps = number();
    else if (s === '--max-seconds') a.maxSeconds = number();
    else if (s === '--save-output') a.saveOutput = value();
    else if (s === '--no-spin') a.spin = false;
    else if (s.startsWith('--')) usage(`unknown option ${s}`);
    else positional.push(s);
  }
  if (positional.length !== 2) usage('expected MODEL.onnx and INPUT.npy');
  [a.model, a.input] = positional;
  if (a.threads < 1 || a.reps < 1 || a.warmup < 0 || a.maxSeconds < 0) {
    usage('--threads and --reps must be >= 1, --warmup and --max-seconds >= 0');
  }
  return a;
}

// Minimal .npy reader/writer: little-endian float32 (and int64 inputs: token
// ids), C order (what scripts/make_models.py and model_suite.py write).
const NPY_TYPES = {'<f4': {type: 'float32', Array: Float32Array},
                   '<i8': {type: 'int64', Array: BigInt64Array}};
function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = (major === 1 ? 10 : 12) + headerLen;
  const header = buf.toString('latin1', major === 1 ? 10 : 12, start);
  const descr = /'descr':\s*'([^']*)'/.exec(header);
  const kind = descr && NPY_TYPES[descr[1]];
  if (!kind) throw new Error(`${file}: expected '<f4' or '<i8', header ${header}`);
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${file}: Fortran order`);
  const m = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!m) throw new Error(`${file}: no shape in header ${header}`);
  const shape = m[1].split(',').map(s => s.trim()).filter(s => s.length).map(Number);
  const n = shape.reduce((p, d) => p * d, 1);
  const bytes = kind.Array.BYTES_PER_ELEMENT * n;
  if (buf.length - start !== bytes) throw new Error(`${file}: payload is not ${bytes} bytes`);
  // Copy into an aligned typed array (the payload offset need not be aligned).
  const data = new kind.Array(n);
  Buffer.from(data.buffer).set(buf.subarray(start, start + bytes));
  return {shape, data, type: kind.type};
}

function writeNpy(file, shape, data) {
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${shape.join(', ')}${
      shape.length === 1 ? ',' : ''}), }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const tmp = `${file}.tmp${process.pid}`;
  fs.writeFileSync(tmp, Buffer.concat([head, Buffer.from(header, 'latin1'), body]));
  fs.renameSync(tmp, file);
}

function median(sorted) {
  const n = sorted.length;
  return n % 2 ? sorted[(n - 1) / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

// Peak resident set of this process image, KiB: VmHWM of /proc/self/status
// (not getrusage's maxRSS, which Linux carries over from the parent's exec).
function maxRssKiB() {
  const m = /VmHWM:\s+(\d+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) : process.resourceUsage().maxRSS;
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const rssStart = maxRssKiB();
  const ort = require('onnxruntime-node');
  const ortVersion = (() => {
    try {
      return require(path.join(path.dirname(require.resolve('onnxruntime-node')), '..',
                               'package.json')).version;
    } catch (e) {
      return ort.env.versions ? ort.env.versions.node : 'unknown';
    }
  })();

  const tLoad = process.hrtime.bigint();
  const options = {
    executionProviders: ['cpu'],
    intraOpNumThreads: a.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  };
  if (!a.spin) options.extra = {session: {intra_op: {allow_spinning: '0'}}};
  const session = await ort.InferenceSession.create(a.model, options);
  const x = readNpy(a.input);
  const feeds = {[session.inputNames[0]]: new ort.Tensor(x.type, x.data, x.shape)};
  const outName = session.outputNames[0];
  const loadSeconds = Number(process.hrtime.bigint() - tLoad) / 1e9;
  const rssLoaded = maxRssKiB();

  let t0 = process.hrtime.bigint();
  const first = await session.run(feeds);
  const firstRunSeconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const y = first[outName];
  for (let i = 1; i < a.warmup; ++i) await session.run(feeds);

  const seconds = [];
  let elapsed = 0;
  while (seconds.length < a.reps) {
    t0 = process.hrtime.bigint();
    await session.run(feeds);
    const dt = Number(process.hrtime.bigint() - t0) / 1e9;
    seconds.push(dt);
    elapsed += dt;
    if (a.maxSeconds > 0 && elapsed >= a.maxSeconds && seconds.length >= 3) break;
  }
  if (a.saveOutput) writeNpy(a.saveOutput, y.dims, y.data);

  const sorted = [...seconds].sort((p, q) => p - q);
  const med = median(sorted);
  const out = {
    runner: 'onnxruntime',
    version: ortVersion,
    node: process.version,
    session_options: options,
    model: a.model,
    input: a.input,
    batch: x.shape.length ? x.shape[0] : 1,
    threads: a.threads,
    warmup: Math.max(a.warmup, 1),
    reps: seconds.length,
    seconds,
    summary: {median: med, min: sorted[0], max: sorted[sorted.length - 1]},
    samples_per_s: (x.shape.length ? x.shape[0] : 1) / med,
    load_seconds: loadSeconds,
    first_run_seconds: firstRunSeconds,
    rss_start_kib: rssStart,
    rss_loaded_kib: rssLoaded,
    peak_rss_kib: maxRssKiB(),
    rss_method: 'VmHWM of /proc/self/status',
  };
  process.stdout.write(JSON.stringify(out) + '\n');
  await session.release();
}

main().catch(e => {
  process.stdout.write(JSON.stringify({runner: 'onnxruntime', error: String(e && e.stack || e)}) +
                       '\n');
  process.exit(1);
});
