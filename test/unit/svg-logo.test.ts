import { describe, expect, it } from "vitest";
import { svgLogoProblem } from "../../api/partners/svg-logo.js";
import { BENIGN_SVGS, HOSTILE_SVGS, MORE_HOSTILE_SVGS } from "../support/hostile-svgs.js";

describe("the SVG logo allow-list (issue 24, finding 6)", () => {
  it.each([...HOSTILE_SVGS, ...MORE_HOSTILE_SVGS])("refuses $name", ({ svg }) => {
    expect(svgLogoProblem(svg)).toEqual(expect.any(String));
  });

  it("names what it refused", () => {
    expect(svgLogoProblem(HOSTILE_SVGS[0]!.svg)).toBe("the element <script> is not allowed");
    expect(svgLogoProblem(HOSTILE_SVGS[1]!.svg)).toBe("the attribute onload on <rect> is not allowed");
    expect(svgLogoProblem(HOSTILE_SVGS[4]!.svg)).toBe(
      "the attribute xlink:href on <use> must refer to an element of this logo (#id)",
    );
    expect(svgLogoProblem(HOSTILE_SVGS[10]!.svg)).toBe("a DOCTYPE (and so entity declarations) is not allowed");
  });

  it.each(BENIGN_SVGS)("accepts $name", ({ svg }) => {
    expect(svgLogoProblem(svg)).toBeUndefined();
  });
});
