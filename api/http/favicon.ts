/**
 * The service's icon, answered at `/favicon.ico`: browsers ask for it on every page (the
 * console, the hosted checkout, the documents), and a 404 there fills every log and console.
 * Drawn here rather than kept as a binary file: a 16×16 ICO holding one uncompressed 32-bit
 * bitmap (a blue disc, the console's accent), which every browser reads.
 */
export function faviconIco(): Uint8Array {
  const size = 16;
  const pixels = size * size * 4;
  // The AND mask: one bit per pixel, rows padded to 32 bits; all zero because the alpha channel already says what shows.
  const mask = size * 4;
  const bitmap = 40 + pixels + mask;
  const bytes = new Uint8Array(6 + 16 + bitmap);
  const view = new DataView(bytes.buffer);
  view.setUint16(2, 1, true); // type: icon
  view.setUint16(4, 1, true); // one image
  bytes[6] = size;
  bytes[7] = size;
  view.setUint16(10, 1, true); // planes
  view.setUint16(12, 32, true); // bits per pixel
  view.setUint32(14, bitmap, true);
  view.setUint32(18, 22, true); // the bitmap's offset
  view.setUint32(22, 40, true); // BITMAPINFOHEADER
  view.setInt32(26, size, true);
  view.setInt32(30, size * 2, true); // an icon's height counts the colour rows and the mask rows
  view.setUint16(34, 1, true);
  view.setUint16(36, 32, true);
  view.setUint32(42, pixels + mask, true);
  const centre = (size - 1) / 2;
  for (let row = 0; row < size; row++) {
    for (let column = 0; column < size; column++) {
      const distance = Math.hypot(column - centre, row - centre);
      const offset = 62 + (row * size + column) * 4;
      // Blue-green-red-alpha, bottom row first; the edge pixel half covered for a smooth disc.
      bytes.set([0xd8, 0x4e, 0x1d, distance <= 7 ? 0xff : distance <= 7.8 ? 0x80 : 0], offset);
    }
  }
  return bytes;
}
