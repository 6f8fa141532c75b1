// Writes a typed array as a little-endian .npy file (version 1.0): the oracle scripts' output format.
const fs = require('fs');

function writeNpy(file, descr, shape, typed) {
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
  header += ' '.repeat(63 - ((header.length + 10) % 64)) + '\n';  // magic + version + length + header: a multiple of 64
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head.writeUInt16LE(header.length, 8);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(header, 'latin1'), Buffer.from(typed.buffer, typed.byteOffset, typed.byteLength)]));
}

module.exports = {writeNpy};
