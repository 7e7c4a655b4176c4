import SwaggerParser from "@apidevtools/swagger-parser";
import { BaseResolver, createConfig, lintDocument, Source } from "@redocly/openapi-core";
import { beforeAll, describe, expect, it } from "vitest";
import type { OpenApiDocument } from "../../api/http/openapi-contract.js";
import { PROBLEM_CODES } from "../../api/http/problem-catalogue.js";
import { openApiDocument } from "../../scripts/openapi-document.js";

// The OpenAPI document as GET /openapi.json serves it, built in this process from the real app (it
// depends on the route definitions only): no chain, no indexer. test/api-contract.test.ts calls
// every operation of the running service against it.
let openApi: OpenApiDocument;

beforeAll(async () => {
  openApi = (await openApiDocument()) as OpenApiDocument;
});

describe("the OpenAPI document", () => {
  it("is valid under swagger-parser", async () => {
    await expect(SwaggerParser.validate(structuredClone(openApi) as never)).resolves.toBeDefined();
  });

  it("passes redocly's recommended rules", async () => {
    const config = await createConfig({ extends: ["recommended"] });
    const text = JSON.stringify(openApi);
    const problems = await lintDocument({
      document: { source: new Source("openapi.json", text), parsed: JSON.parse(text) },
      config: config.styleguide,
      externalRefResolver: new BaseResolver(),
    });
    const found = problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`);
    // The health check answers 200 or 503 and nothing else: it has no 4XX to document.
    expect(found.filter((line) => !line.includes("operation-4xx-response") || !line.includes("~1v1~1health/"))).toEqual([]);
  });

  it("types every success and lists every problem code in the registry's schema", () => {
    const untyped: string[] = [];
    for (const [path, methods] of Object.entries(openApi.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        for (const [status, response] of Object.entries(operation.responses)) {
          for (const [type, media] of Object.entries(response.content ?? {})) {
            const schema = media.schema ?? {};
            if (Object.keys(schema).length === 0) untyped.push(`${method} ${path} ${status} ${type}`);
          }
        }
        if (!Object.keys(operation.responses).some((status) => /^4\d\d$/.test(status)) && path !== "/v1/health")
          untyped.push(`${method} ${path}: no 4XX`);
      }
    }
    expect(untyped).toEqual([]);
    const problem = openApi.components?.schemas?.Problem as { properties: { code: { enum: string[] } } };
    expect(problem.properties.code.enum).toEqual(PROBLEM_CODES);
    expect(Object.keys(openApi.paths)).toContain("/checkout/{sessionId}/qr");
  });

  it("declares the objects it answers: no open index signature in the document's object schemas", () => {
    const open: string[] = [];
    const walk = (node: unknown, path: string): void => {
      if (Array.isArray(node)) {
        for (const [index, item] of node.entries()) walk(item, `${path}/${index}`);
        return;
      }
      if (node === null || typeof node !== "object") return;
      const schema = node as Record<string, unknown>;
      const extra = schema.additionalProperties;
      if (schema.properties !== undefined && extra !== undefined && extra !== false) open.push(path);
      for (const [key, value] of Object.entries(schema)) walk(value, `${path}/${key}`);
    };
    walk(openApi, "#");
    expect(open).toEqual([]);
  });
});
