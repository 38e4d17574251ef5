/** What of an upstream URL counts as secret, and how it leaves a text (src/errors/secret-texts.ts). */
import { describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { GatewayError } from "../../src/errors/gateway-error.js";
import { keepSecretsOf, secretPartsOfUrl, withoutSecrets, withoutSecretsInJson } from "../../src/errors/secret-texts.js";

describe("secretPartsOfUrl", () => {
  it.each([
    ["https://mainnet.infura.io/v3/0123456789abcdef0123456789abcdef", ["0123456789abcdef0123456789abcdef"]],
    ["https://eth-mainnet.g.alchemy.com/v2/AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEf", ["AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEf"]],
    ["https://rpc.ankr.com/eth/4f3a2b1c9d8e7f60", ["4f3a2b1c9d8e7f60"]],
    ["https://example.quiknode.pro/a1b2c3d4e5f6/", ["a1b2c3d4e5f6"]],
    ["wss://mainnet.infura.io/ws/v3/0123456789abcdef0123456789abcdef", ["0123456789abcdef0123456789abcdef"]],
  ])("a provider's key in the path: %s", (url, parts) => {
    expect(secretPartsOfUrl(url)).toEqual(parts);
  });

  it("user info and query values, as written and decoded; route words and short segments are not secrets", () => {
    const basic = (pair: string) => Buffer.from(pair).toString("base64");
    expect(secretPartsOfUrl("https://nodeuser:p%40ss-word-1@node.example/eth/mainnet/rpc?apikey=key%2Fwith-slash1&x=1").sort()).toEqual(
      ["nodeuser", "p%40ss-word-1", "p@ss-word-1", "nodeuser:p@ss-word-1", basic("nodeuser:p@ss-word-1"), "key/with-slash1", "key%2Fwith-slash1"].sort(),
    );
    // Found from outside: the Basic authorization made of user info (which a node echoing its request's headers
    // quotes) reached callers in clear. Shorter user info and query values are not cut out of texts: "123456" would
    // corrupt revert data holding those digits, and let callers test guesses by having them echoed back.
    expect(secretPartsOfUrl("http://user1:123456@node.example/?k=abc123&on=true").sort()).toEqual(["user1:123456", basic("user1:123456")].sort());
    expect(secretPartsOfUrl("http://127.0.0.1:8545")).toEqual([]);
    expect(secretPartsOfUrl("https://host/ethereum/mainnet/archive")).toEqual([]);
    expect(secretPartsOfUrl("not a url")).toEqual([]);
  });
});

describe("withoutSecrets", () => {
  it("cuts each secret out in whatever case the node quotes it, the longest first, and special characters count as themselves", () => {
    keepSecretsOf("http://user:pw12345678@node.example/v3/SECRETKEY0123456789abc?apikey=QUERY.SECRET+99");
    expect(withoutSecrets("bad request to /v3/SECRETKEY0123456789abc?apikey=QUERY.SECRET+99")).toBe("bad request to /v3/<redacted>?apikey=<redacted>");
    // Found from outside: a node that upper-cases its request line quoted the key in clear.
    expect(withoutSecrets("BAD /V3/SECRETKEY0123456789ABC?APIKEY=QUERY.SECRET+99")).toBe("BAD /V3/<redacted>?APIKEY=<redacted>");
    expect(withoutSecrets("auth user:pw12345678 dXNlcjpwdzEyMzQ1Njc4")).toBe("auth <redacted> <redacted>");
    // "." and "+" are not patterns: a text that only matches them as such is left as it is.
    expect(withoutSecrets("QUERYxSECRET99")).toBe("QUERYxSECRET99");
    expect(withoutSecrets("nothing secret here")).toBe("nothing secret here");
  });

  it("cuts secrets out of JSON text that escapes them (a node's error data written by json.dumps)", () => {
    keepSecretsOf("http://node.example/?apikey=ab%22cdefgh&k2=caf%C3%A9-s3cret");
    // Found from outside: the error data quoted them escaped, and reached callers in clear.
    expect(withoutSecrets(String.raw`"echo: GET /?apikey=ab\"cdefgh&k2=caf\u00e9-s3cret"`)).toBe(String.raw`"echo: GET /?apikey=<redacted>&k2=<redacted>"`);
    expect(withoutSecrets(String.raw`"k2=caf\u00E9-s3cret, raw café-s3cret"`)).toBe(String.raw`"k2=<redacted>, raw <redacted>"`);
  });
});

describe("withoutSecretsInJson", () => {
  it("cuts secrets out of a node's JSON whose encoder escaped characters inside them (.NET's \\u002B, PHP's \\/, any \\uXXXX)", () => {
    keepSecretsOf("http://node.example/v3/UPSTREAMKEYabc123def456?token=Tok+en/Secret99x");
    // Found from outside: the caller's JSON parser decoded these back into the upstream's key and token.
    const escaped = String.raw`{"request":"/v3/\u0055PSTREAMKEYabc123def456?token=Tok\u002Ben\/Secret99x"}`;
    expect(withoutSecrets(escaped)).toBe(escaped);
    const cut = withoutSecretsInJson(escaped);
    expect(JSON.parse(cut)).toEqual({ request: "/v3/<redacted>?token=<redacted>" });
    // Every node error's data and other members go through it.
    const err = new GatewayError({ code: -32000, message: "bad", data: escaped, otherMembers: String.raw`,"echo":"Tok\u002Ben\/Secret99x","n":1`, grpcCode: Code.Unknown, origin: "upstream" });
    expect(JSON.parse(err.data as string)).toEqual({ request: "/v3/<redacted>?token=<redacted>" });
    expect(err.otherMembers).toBe(`,"echo":"<redacted>","n":1`);
  });

  it("leaves JSON without a secret as the node wrote it, escapes and all", () => {
    const text = String.raw`{"note":"caf\u00e9 \/ ok","n":123456789012345678901234567890}`;
    expect(withoutSecretsInJson(text)).toBe(text);
    expect(withoutSecretsInJson(`"0xdeadbeef"`)).toBe(`"0xdeadbeef"`);
  });
});
