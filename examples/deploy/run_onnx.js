// Run an ONNX model exported by nbtorch.onnx.export without Python (onnxruntime-node).
//
//   npm install --ignore-scripts onnxruntime-node      (the CPU runtime ships in the package)
//   node run_onnx.js model.onnx inputs.json
//
// inputs.json: {"<input name>": {"dims": [...], "data": [...], "type": "float32"}, ...}
// Prints {"<output name>": {"dims": [...], "data": [...]}, ...} as JSON on stdout.
const fs = require('fs');
const ort = require('onnxruntime-node');

async function main() {
  const [modelPath, inputsPath] = process.argv.slice(2);
  if (!modelPath || !inputsPath) {
    console.error('usage: node run_onnx.js model.onnx inputs.json');
    process.exit(2);
  }
  const session = await ort.InferenceSession.create(modelPath);
  const spec = JSON.parse(fs.readFileSync(inputsPath, 'utf8'));
  const feeds = {};
  for (const name of session.inputNames) {
    const t = spec[name];
    if (!t) throw new Error(`missing input ${name}`);
    const type = t.type || 'float32';
    const data = type === 'int64' ? BigInt64Array.from(t.data.map(BigInt))
                                  : Float32Array.from(t.data);
    feeds[name] = new ort.Tensor(type, data, t.dims);
  }
  const results = await session.run(feeds);
  const out = {};
  for (const name of session.outputNames) {
    const r = results[name];
    out[name] = {dims: r.dims, data: Array.from(r.data, Number)};
  }
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => { console.error(e.message); process.exit(1); });
