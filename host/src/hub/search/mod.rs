//! Ranked search over operations (`hub_search`) and "did you mean" suggestions for
//! unknown tool names.
//!
//! Ranking is BM25F: each operation is one document whose fields — the tool name,
//! the description, the input schema's property names and the property descriptions —
//! contribute term frequencies with different weights (a word in the name says more
//! than one in a property description). Per-posting BM25 weights are computed when the
//! index is built (once per registry reload), so a query is a few posting-list walks
//! and a top-k: well under 100 µs for a thousand operations (`cargo bench --bench
//! hub`, its `hub_search` part).

mod suggest;
pub(crate) mod text;

pub(crate) use suggest::suggest;

use serde_json::Value;
use std::collections::HashMap;

const K1: f32 = 1.2;
const B: f32 = 0.75;
const NAME_WEIGHT: f32 = 3.0;
const DESCRIPTION_WEIGHT: f32 = 1.0;
const PROPERTY_WEIGHT: f32 = 1.5;
const PROPERTY_DESCRIPTION_WEIGHT: f32 = 0.5;
/// A query word that is only a prefix of indexed words ("slug" for "slugify") counts
/// this much of a full match.
const PREFIX_FACTOR: f32 = 0.5;
/// A query word's synonyms count this much of the word itself.
const SYNONYM_FACTOR: f32 = 0.6;
/// Most indexed words one unknown query word may expand to by prefix.
const MAX_PREFIX_EXPANSIONS: usize = 8;

/// Generic verbs and nouns tool descriptions use interchangeably. Query-side only, so
/// an exact word always outranks its synonym.
const SYNONYMS: &[&[&str]] = &[
    &["delete", "remove", "erase", "drop"],
    &["get", "fetch", "retrieve", "read", "download", "lookup"],
    &["create", "make", "add", "new", "generate"],
    &["find", "search", "lookup", "query"],
    &["update", "modify", "edit", "change", "set"],
    &["convert", "transform", "translate"],
    &["calculate", "compute", "evaluate"],
    &["image", "picture", "photo"],
    &["list", "enumerate", "show"],
    &["send", "post", "publish"],
];

/// One operation as the index sees it.
pub struct SearchDoc<'a> {
    /// The operation name, `plugin.operation` (its words are indexed too).
    pub tool: &'a str,
    /// The operation's description from its manifest.
    pub description: &'a str,
    /// The operation's input schema (property names and descriptions are indexed).
    pub input_schema: &'a Value,
}

/// For each stemmed word of a [`SYNONYMS`] group, the vocabulary ids of the other
/// words of its group.
fn synonym_terms(vocab: &HashMap<String, u32>) -> HashMap<String, Vec<u32>> {
    let mut synonyms: HashMap<String, Vec<u32>> = HashMap::new();
    for group in SYNONYMS {
        let stems: Vec<String> = group.iter().map(|s| text::stem(s)).collect();
        for word in &stems {
            let ids = synonyms.entry(word.clone()).or_default();
            for other in stems.iter().filter(|o| *o != word) {
                if let Some(&id) = vocab.get(other)
                    && !ids.contains(&id)
                {
                    ids.push(id);
                }
            }
        }
    }
    synonyms
}

/// A ranked result: the document's position in the build order and its score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub doc: usize,
    pub score: f32,
}

/// An immutable BM25F index, built once per registry snapshot.
pub struct SearchIndex {
    tools: Vec<String>,
    /// Byte length of each tool's namespace (the part before the first dot).
    namespace_len: Vec<usize>,
    vocab: HashMap<String, u32>,
    /// Vocabulary sorted by word, for prefix expansion of unknown query words.
    sorted_vocab: Vec<(String, u32)>,
    idf: Vec<f32>,
    /// Per term: (doc, precomputed BM25 term-frequency component).
    postings: Vec<Vec<(u32, f32)>>,
    by_tool: HashMap<String, u32>,
    /// Stemmed query word → ids of its indexed synonyms.
    synonyms: HashMap<String, Vec<u32>>,
}

impl SearchIndex {
    /// Indexes `docs`; document numbers follow their order.
    pub fn build<'a>(docs: impl IntoIterator<Item = SearchDoc<'a>>) -> SearchIndex {
        let mut tools = Vec::new();
        let mut namespace_len = Vec::new();
        let mut vocab: HashMap<String, u32> = HashMap::new();
        let mut doc_terms: Vec<HashMap<u32, f32>> = Vec::new();
        let mut doc_len: Vec<f32> = Vec::new();
        for doc in docs {
            let mut tf: HashMap<u32, f32> = HashMap::new();
            let mut len = 0.0;
            let mut add = |text: &str, weight: f32, tf: &mut HashMap<u32, f32>| {
                for term in text::terms(text) {
                    let next = vocab.len() as u32;
                    let id = *vocab.entry(term).or_insert(next);
                    *tf.entry(id).or_default() += weight;
                    len += weight;
                }
            };
            add(doc.tool, NAME_WEIGHT, &mut tf);
            add(doc.description, DESCRIPTION_WEIGHT, &mut tf);
            walk_properties(doc.input_schema, 0, &mut |name, description| {
                add(name, PROPERTY_WEIGHT, &mut tf);
                if let Some(d) = description {
                    add(d, PROPERTY_DESCRIPTION_WEIGHT, &mut tf);
                }
            });
            tools.push(doc.tool.to_string());
            namespace_len.push(doc.tool.find('.').unwrap_or(doc.tool.len()));
            doc_terms.push(tf);
            doc_len.push(len);
        }
        let n = tools.len();
        let avg_len = if n == 0 {
            1.0
        } else {
            (doc_len.iter().sum::<f32>() / n as f32).max(1.0)
        };
        let mut postings: Vec<Vec<(u32, f32)>> = vec![Vec::new(); vocab.len()];
        for (doc, tf) in doc_terms.into_iter().enumerate() {
            let norm = K1 * (1.0 - B + B * doc_len[doc] / avg_len);
            for (term, f) in tf {
                postings[term as usize].push((doc as u32, f * (K1 + 1.0) / (f + norm)));
            }
        }
        let idf = postings
            .iter()
            .map(|p| {
                let df = p.len() as f32;
                (1.0 + (n as f32 - df + 0.5) / (df + 0.5)).ln()
            })
            .collect();
        let mut sorted_vocab: Vec<(String, u32)> = vocab.iter().map(|(k, v)| (k.clone(), *v)).collect();
        sorted_vocab.sort();
        let by_tool = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.clone(), i as u32))
            .collect();
        let synonyms = synonym_terms(&vocab);
        SearchIndex {
            tools,
            namespace_len,
            vocab,
            sorted_vocab,
            idf,
            postings,
            by_tool,
            synonyms,
        }
    }

    /// How many operations are indexed.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether no operation is indexed.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The tool name of document `doc`.
    pub fn tool(&self, doc: usize) -> &str {
        &self.tools[doc]
    }

    /// The namespace (plugin name) of document `doc`.
    pub fn namespace(&self, doc: usize) -> &str {
        &self.tools[doc][..self.namespace_len[doc]]
    }

    /// Up to `limit` documents matching `query`, best first, restricted to
    /// `namespace` when given and to documents `allowed` accepts. Ties keep build
    /// order, so results are deterministic.
    pub fn search(
        &self,
        query: &str,
        namespace: Option<&str>,
        limit: usize,
        allowed: impl Fn(usize) -> bool,
    ) -> Vec<Hit> {
        let mut scores = vec![0.0f32; self.tools.len()];
        // A term reached several ways (a word and another word's synonym) counts once,
        // at its strongest.
        let mut terms: Vec<(u32, f32)> = Vec::new();
        for (term, factor) in self.query_terms(query) {
            match terms.iter_mut().find(|(t, _)| *t == term) {
                Some(entry) => entry.1 = entry.1.max(factor),
                None => terms.push((term, factor)),
            }
        }
        for (term, factor) in terms {
            let idf = self.idf[term as usize] * factor;
            for &(doc, weight) in &self.postings[term as usize] {
                scores[doc as usize] += idf * weight;
            }
        }
        // Naming a tool exactly ("text.slugify") puts it first.
        if let Some(&doc) = self.by_tool.get(query.trim()) {
            let best = scores.iter().cloned().fold(0.0, f32::max);
            scores[doc as usize] = best + 1.0;
        }
        let mut hits: Vec<Hit> = scores
            .iter()
            .enumerate()
            .filter(|&(doc, &score)| {
                score > 0.0 && namespace.is_none_or(|ns| self.namespace(doc) == ns) && allowed(doc)
            })
            .map(|(doc, &score)| Hit { doc, score })
            .collect();
        let by_score = |a: &Hit, b: &Hit| b.score.total_cmp(&a.score).then(a.doc.cmp(&b.doc));
        if hits.len() > limit {
            hits.select_nth_unstable_by(limit, by_score);
            hits.truncate(limit);
        }
        hits.sort_by(by_score);
        hits
    }

    /// Query words as (term id, weight factor): exact terms at 1, synonyms and prefix
    /// expansions at less, in query order.
    fn query_terms(&self, query: &str) -> Vec<(u32, f32)> {
        let mut out = Vec::new();
        for word in text::terms(query) {
            if let Some(&id) = self.vocab.get(&word) {
                out.push((id, 1.0));
            } else if word.len() >= 3 {
                let start = self
                    .sorted_vocab
                    .partition_point(|(w, _)| w.as_str() < word.as_str());
                out.extend(
                    self.sorted_vocab[start..]
                        .iter()
                        .take_while(|(w, _)| w.starts_with(word.as_str()))
                        .take(MAX_PREFIX_EXPANSIONS)
                        .map(|&(_, id)| (id, PREFIX_FACTOR)),
                );
            }
            if let Some(ids) = self.synonyms.get(&word) {
                out.extend(ids.iter().map(|&id| (id, SYNONYM_FACTOR)));
            }
        }
        out
    }
}

/// Calls `f(name, description)` for every property of an object schema, following
/// nested `properties` and array `items` a few levels down.
fn walk_properties(schema: &Value, depth: usize, f: &mut impl FnMut(&str, Option<&str>)) {
    if depth > 3 {
        return;
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, sub) in props {
            f(name, sub.get("description").and_then(Value::as_str));
            walk_properties(sub, depth + 1, f);
        }
    }
    if let Some(items) = schema.get("items") {
        walk_properties(items, depth + 1, f);
    }
}

#[cfg(test)]
mod relevance;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn index(specs: &[(&str, &str, Value)]) -> SearchIndex {
        SearchIndex::build(specs.iter().map(|(tool, description, schema)| SearchDoc {
            tool,
            description,
            input_schema: schema,
        }))
    }

    fn sample() -> SearchIndex {
        index(&[
            (
                "text.slugify",
                "Turn a title into a URL slug.",
                json!({"properties": {"text": {}}}),
            ),
            (
                "text.word_count",
                "Count the words in a text.",
                json!({"properties": {"text": {}}}),
            ),
            (
                "weather.forecast",
                "Daily weather forecast for a city.",
                json!({"properties": {"city": {}, "days": {}}}),
            ),
            (
                "calc.eval",
                "Evaluate an arithmetic expression.",
                json!({"properties": {"expression": {}}}),
            ),
        ])
    }

    #[test]
    fn ranks_by_name_description_and_properties() {
        let idx = sample();
        let top = |q: &str| {
            idx.search(q, None, 3, |_| true)
                .first()
                .map(|h| idx.tool(h.doc).to_string())
        };
        assert_eq!(top("slug").as_deref(), Some("text.slugify"));
        assert_eq!(top("how many words").as_deref(), Some("text.word_count"));
        assert_eq!(
            top("forecast for days in a city").as_deref(),
            Some("weather.forecast")
        );
        assert_eq!(top("compute an expression").as_deref(), Some("calc.eval"));
        assert_eq!(top("calc.eval").as_deref(), Some("calc.eval"));
        assert!(idx.search("zebra", None, 3, |_| true).is_empty());
        assert!(idx.search("", None, 3, |_| true).is_empty());
    }

    #[test]
    fn filters_by_namespace_permission_and_limit() {
        let idx = sample();
        let hits = idx.search("text", Some("text"), 10, |_| true);
        assert_eq!(hits.len(), 2);
        assert!(hits.iter().all(|h| idx.namespace(h.doc) == "text"));
        let hits = idx.search("text", None, 10, |doc| idx.tool(doc) != "text.slugify");
        assert!(hits.iter().all(|h| idx.tool(h.doc) != "text.slugify"));
        assert_eq!(idx.search("text words slug", None, 1, |_| true).len(), 1);
        let scores: Vec<f32> = idx
            .search("text words", None, 10, |_| true)
            .iter()
            .map(|h| h.score)
            .collect();
        assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    }
}
