import { SaxesParser } from "saxes";

/**
 * The SVG logo check (issue 24, finding 6): the logo is parsed as XML (saxes, a
 * conforming non-validating parser that expands no entity of its own) and refused
 * unless every node is on an allow-list of drawing elements and attributes. What a
 * pattern check misses (an `onload` spelled in another case, an `xlink:href` to
 * another host, an `<animate>` that sets `href`, `foreignObject` content) is simply
 * not on the list. Nothing is rewritten: a logo is stored as sent or refused, with
 * the reason naming what was refused.
 */

const SVG_NS = "http://www.w3.org/2000/svg";
const XLINK_NS = "http://www.w3.org/1999/xlink";

const ELEMENTS = new Set([
  "svg",
  "g",
  "path",
  "rect",
  "circle",
  "ellipse",
  "line",
  "polyline",
  "polygon",
  "text",
  "tspan",
  "defs",
  "linearGradient",
  "radialGradient",
  "stop",
  "clipPath",
  "mask",
  "title",
  "desc",
  "symbol",
  "use",
]);

const ATTRIBUTES = new Set([
  // structure and identity
  "id",
  "class",
  "viewBox",
  "version",
  "preserveAspectRatio",
  "role",
  "aria-label",
  "aria-hidden",
  "focusable",
  "xml:space",
  "xml:lang",
  "lang",
  // geometry
  "width",
  "height",
  "x",
  "y",
  "x1",
  "y1",
  "x2",
  "y2",
  "cx",
  "cy",
  "r",
  "rx",
  "ry",
  "fx",
  "fy",
  "fr",
  "d",
  "points",
  "pathLength",
  "transform",
  "dx",
  "dy",
  "rotate",
  "textLength",
  "lengthAdjust",
  // gradients, clips and masks
  "offset",
  "gradientUnits",
  "gradientTransform",
  "spreadMethod",
  "clipPathUnits",
  "maskUnits",
  "maskContentUnits",
  // presentation attributes
  "fill",
  "fill-opacity",
  "fill-rule",
  "stroke",
  "stroke-width",
  "stroke-opacity",
  "stroke-linecap",
  "stroke-linejoin",
  "stroke-miterlimit",
  "stroke-dasharray",
  "stroke-dashoffset",
  "opacity",
  "stop-color",
  "stop-opacity",
  "clip-path",
  "clip-rule",
  "mask",
  "color",
  "display",
  "visibility",
  "vector-effect",
  "shape-rendering",
  "text-rendering",
  "paint-order",
  "font-family",
  "font-size",
  "font-weight",
  "font-style",
  "font-variant",
  "text-anchor",
  "text-decoration",
  "dominant-baseline",
  "alignment-baseline",
  "baseline-shift",
  "letter-spacing",
  "word-spacing",
  "style",
  // references, checked to be local below
  "href",
  "xlink:href",
  // namespaces, checked below
  "xmlns",
  "xmlns:xlink",
]);

const LOCAL_REFERENCE = /^#[A-Za-z_][\w.:-]*$/;
const LOCAL_URL = /^url\(\s*(["']?)#[A-Za-z_][\w.:-]*\1\s*\)$/i;

class Refused extends Error {}

/** Why an SVG logo is refused, or undefined when every part of it is allowed. */
export function svgLogoProblem(text: string): string | undefined {
  const parser = new SaxesParser({ xmlns: false, position: false });
  let root: string | undefined;
  const refuse = (reason: string): never => {
    throw new Refused(reason);
  };
  parser.on("doctype", () => refuse("a DOCTYPE (and so entity declarations) is not allowed"));
  parser.on("processinginstruction", (pi) => refuse(`the processing instruction <?${pi.target}?> is not allowed`));
  parser.on("cdata", () => refuse("CDATA sections are not allowed"));
  parser.on("opentag", (tag) => {
    root ??= tag.name;
    if (root !== "svg") refuse(`the root element is <${tag.name}>, not <svg>`);
    if (!ELEMENTS.has(tag.name)) refuse(`the element <${tag.name}> is not allowed`);
    for (const [name, value] of Object.entries(tag.attributes)) {
      const problem = attributeProblem(tag.name, name, String(value));
      if (problem !== undefined) refuse(problem);
    }
  });
  parser.on("error", (error) => refuse(`not well-formed XML (${error.message.split("\n")[0]})`));
  try {
    parser.write(text).close();
  } catch (error) {
    if (error instanceof Refused) return error.message;
    throw error;
  }
  return root === undefined ? "not an SVG document" : undefined;
}

function attributeProblem(element: string, name: string, value: string): string | undefined {
  const where = `attribute ${name} on <${element}>`;
  if (!ATTRIBUTES.has(name)) return `the ${where} is not allowed`;
  if (name === "xmlns" && value !== SVG_NS) return `the ${where} must be ${SVG_NS}`;
  if (name === "xmlns:xlink" && value !== XLINK_NS) return `the ${where} must be ${XLINK_NS}`;
  if (name === "href" || name === "xlink:href") {
    if (element !== "use") return `the ${where} is not allowed (only <use> refers to another element)`;
    if (!LOCAL_REFERENCE.test(value.trim())) return `the ${where} must refer to an element of this logo (#id)`;
  }
  if (/javascript:|data:|@import|expression\s*\(|\\/i.test(value)) return `the ${where} holds a script, data or import`;
  for (const url of value.match(/url\s*\([^)]*\)?/gi) ?? []) {
    if (!LOCAL_URL.test(url)) return `the ${where} refers to ${url.slice(0, 60)} (only url(#id) of this logo)`;
  }
  return undefined;
}
