//! The relevance test set: 112 operation specs that read like real tools across 28
//! namespaces, and 56 queries phrased the way a model asks, each with the tool it
//! should find (`host/tests/data/search_corpus.json`). The test prints hit@1 and
//! hit@3 and holds hit@3 to at least 0.9.

use super::{SearchDoc, SearchIndex};
use serde_json::{Value, json};

const CORPUS: &str = include_str!("../../../tests/data/search_corpus.json");

/// The corpus's operations as (tool, description, input schema).
pub(super) fn corpus_operations() -> Vec<(String, String, Value)> {
    let corpus: Value = serde_json::from_str(CORPUS).unwrap();
    corpus["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|op| {
            let properties: serde_json::Map<String, Value> = op["properties"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(name, description)| (name.clone(), json!({ "description": description })))
                .collect();
            (
                op["tool"].as_str().unwrap().to_string(),
                op["description"].as_str().unwrap().to_string(),
                json!({ "type": "object", "properties": properties }),
            )
        })
        .collect()
}

#[test]
fn relevance_hit_at_3_is_at_least_0_9() {
    let ops = corpus_operations();
    let namespaces: std::collections::HashSet<&str> =
        ops.iter().map(|(t, _, _)| t.split('.').next().unwrap()).collect();
    assert!(ops.len() >= 100 && namespaces.len() >= 15);
    let index = SearchIndex::build(ops.iter().map(|(tool, description, schema)| SearchDoc {
        tool,
        description,
        input_schema: schema,
    }));
    let corpus: Value = serde_json::from_str(CORPUS).unwrap();
    let queries = corpus["queries"].as_array().unwrap();
    assert!(queries.len() >= 40);
    let (mut hit1, mut hit3) = (0, 0);
    let mut misses = Vec::new();
    for q in queries {
        let (query, expect) = (q["q"].as_str().unwrap(), q["expect"].as_str().unwrap());
        let top: Vec<&str> = index
            .search(query, None, 3, |_| true)
            .iter()
            .map(|h| index.tool(h.doc))
            .collect();
        if top.first() == Some(&expect) {
            hit1 += 1;
        }
        if top.contains(&expect) {
            hit3 += 1;
        } else {
            misses.push(format!("{query:?}: expected {expect}, got {top:?}"));
        }
    }
    let n = queries.len() as f64;
    let (at1, at3) = (hit1 as f64 / n, hit3 as f64 / n);
    println!(
        "relevance: {} queries over {} operations: hit@1 = {at1:.3}, hit@3 = {at3:.3}",
        queries.len(),
        ops.len()
    );
    for miss in &misses {
        println!("  miss: {miss}");
    }
    assert!(
        at3 >= 0.9,
        "hit@3 = {at3:.3} < 0.9; misses:\n{}",
        misses.join("\n")
    );
}
