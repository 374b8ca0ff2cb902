// The authoring suite's signer (JavaScript): `sign` reads the secret it declares
// with `reveal = true` through the SDK (`revealSecret`) and answers what the suite
// checks: the value's length and last 4 characters, and the value itself, which the
// hub must scrub.
import { definePlugin, revealSecret, s } from "./wasmhub-plugin/index.js";

export const operations = definePlugin({
  operations: {
    sign: {
      description: "Read the revealed signing key.",
      input: s.object({}),
      output: s.object({ length: s.integer("Characters in the key."), last4: s.string("Its last 4 characters."), echo: s.string("The key itself.") }),
      hints: ["read_only"],
      run: () => {
        const key = revealSecret("SIGNING_KEY");
        const chars = [...key];
        return { length: chars.length, last4: chars.slice(-4).join(""), echo: key };
      },
    },
  },
});
