import QRCode from "qrcode";

/**
 * The EIP-681 payment link as an SVG QR code, drawn on the server so the page
 * needs no script from elsewhere. Only `<svg>` and `<path>` with presentation
 * attributes: safe to insert into the page under a strict CSP.
 */
export async function paymentQrSvg(uri: string): Promise<string> {
  return QRCode.toString(uri, {
    type: "svg",
    errorCorrectionLevel: "M",
    margin: 2,
    color: { dark: "#000000", light: "#ffffff" },
  });
}
