// The 14 hostile SVG logos of the second attack review (issue 24, finding 6), each
// with what it tries, plus benign logos that must still be accepted.
const open = '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" viewBox="0 0 10 10">';

export const HOSTILE_SVGS: { name: string; svg: string }[] = [
  { name: "script element", svg: `${open}<script>fetch("/steal")</script></svg>` },
  { name: "event handler", svg: `${open}<rect width="10" height="10" onload="fetch('/steal')"/></svg>` },
  { name: "event handler on the root, upper case", svg: '<svg xmlns="http://www.w3.org/2000/svg" ONLOAD="alert(1)"></svg>' },
  { name: "external image href", svg: `${open}<image href="http://127.0.0.1:9/pixel.png" width="10" height="10"/></svg>` },
  { name: "external xlink:href on use", svg: `${open}<use xlink:href="http://127.0.0.1:9/sprite.svg#a"/></svg>` },
  { name: "use of an external file", svg: `${open}<use href="sprite.svg#a"/></svg>` },
  {
    name: "foreignObject with HTML",
    svg: `${open}<foreignObject width="10" height="10"><img xmlns="http://www.w3.org/1999/xhtml" src="x" onerror="alert(1)"/></foreignObject></svg>`,
  },
  {
    name: "style element with url()",
    svg: `${open}<style>rect { fill: url(http://127.0.0.1:9/x.svg#p) }</style><rect width="10" height="10"/></svg>`,
  },
  { name: "style element with @import", svg: `${open}<style>@import "http://127.0.0.1:9/x.css";</style></svg>` },
  {
    name: "data: URI holding script",
    svg: `${open}<image href="data:image/svg+xml;base64,${Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>').toString("base64")}"/></svg>`,
  },
  {
    name: "DOCTYPE with an entity",
    svg: `<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>${open}<text>&xxe;</text></svg>`,
  },
  { name: "javascript: link", svg: `${open}<a href="javascript:alert(1)"><rect width="10" height="10"/></a></svg>` },
  {
    name: "animate and set that set href",
    svg: `${open}<a><animate attributeName="href" values="javascript:alert(1)"/><set attributeName="xlink:href" to="javascript:alert(1)"/><rect width="10" height="10"/></a></svg>`,
  },
  {
    name: "iframe and embed inside",
    svg: `${open}<iframe src="http://127.0.0.1:9/"/><embed src="http://127.0.0.1:9/x.swf"/></svg>`,
  },
];

/** Further slips a pattern check would miss: each must be refused too. */
export const MORE_HOSTILE_SVGS: { name: string; svg: string }[] = [
  {
    name: "style attribute with an external url()",
    svg: `${open}<rect style="fill:url(http://127.0.0.1:9/p)" width="1" height="1"/></svg>`,
  },
  { name: "fill with an external url()", svg: `${open}<rect fill="url('//127.0.0.1:9/p#a')" width="1" height="1"/></svg>` },
  { name: "CSS escape in a style", svg: `${open}<rect style="fill:u\\72l(http://127.0.0.1:9/p)" width="1" height="1"/></svg>` },
  { name: "stylesheet processing instruction", svg: `<?xml-stylesheet href="http://127.0.0.1:9/x.css"?>${open}</svg>` },
  { name: "XHTML default namespace on a child", svg: `${open}<g xmlns="http://www.w3.org/1999/xhtml"><rect/></g></svg>` },
  { name: "prefixed script element", svg: `<s:svg xmlns:s="http://www.w3.org/2000/svg"><s:script>alert(1)</s:script></s:svg>` },
  { name: "not SVG", svg: "<html><body>hi</body></html>" },
  { name: "not XML", svg: "<svg><rect></svg>" },
];

export const BENIGN_SVGS: { name: string; svg: string }[] = [
  {
    name: "circle",
    svg: '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><circle cx="5" cy="5" r="4" fill="#1a7f37"/></svg>',
  },
  {
    name: "gradient, clip path, local use and text",
    svg: `<?xml version="1.0" encoding="UTF-8"?>
<!-- Demo Tees logo -->
${open}
  <title>Demo Tees</title>
  <defs>
    <linearGradient id="g" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="#1a7f37"/><stop offset="1" stop-color="#0b3d1a"/></linearGradient>
    <clipPath id="c"><circle cx="5" cy="5" r="5"/></clipPath>
    <symbol id="dot"><circle cx="1" cy="1" r="1"/></symbol>
  </defs>
  <g clip-path="url(#c)"><rect width="10" height="10" style="fill:url(#g)"/></g>
  <use href="#dot" x="4" y="4" fill="#ffffff"/><use xlink:href="#dot" x="1" y="1"/>
  <text x="1" y="9" font-size="2" fill="white">DT</text>
</svg>`,
  },
];
