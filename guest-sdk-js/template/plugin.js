// The {{name}} plugin's operations. Plain ES module: component.js turns it into a
// component, plugin.test.mjs tests it in Node. Add operations to the table below.
import { config, definePlugin, s, InvalidInput } from "./wasmhub-plugin/index.js";

/** Longest result `repeat` builds, in characters: one call must not run away. */
const MAX_OUTPUT_CHARS = 10000;

export const operations = definePlugin({
  instructions: "{{name}} is a new plugin: describe here what a model should know before using it.",
  operations: {
    repeat: {
      description: "Repeat a text a number of times, optionally joined by a separator.",
      input: s.object({
        text: s.string("The text to repeat."),
        times: s.integer({ description: "How many copies.", minimum: 0, maximum: 1000 }),
        separator: s.optional(s.string("Put between copies (default: the operator's `separator`, else nothing).")),
      }),
      output: s.object({ text: s.string("`text` repeated `times` times.") }),
      hints: ["read_only", "idempotent"],
      examples: [
        // Examples give every input that configuration could change: the hub runs
        // them at load with the operator's configuration.
        { description: "Three copies, no separator.", input: { text: "ab", times: 3, separator: "" }, output: { text: "ababab" } },
        { description: "With a separator.", input: { text: "ab", times: 3, separator: "-" }, output: { text: "ab-ab-ab" } },
      ],
      run: ({ text, times, separator: given }) => {
        // The operator's `separator` ([config.separator] in {{name}}.toml) when the
        // input gives none; in plain Node nothing is configured.
        const separator = given ?? config.getString("separator") ?? "";
        const length = [...text].length * times + [...separator].length * Math.max(times - 1, 0);
        if (length > MAX_OUTPUT_CHARS) {
          throw new InvalidInput(`the result would be ${length} characters; the limit is ${MAX_OUTPUT_CHARS}`);
        }
        return { text: Array(times).fill(text).join(separator) };
      },
    },
  },
});
