//! The cost of a model step from `[accounting.prices]`: per million tokens, input
//! not served from cache, cached input (the input price when none is given) and
//! output (reasoning tokens are part of the output, billed as output).

use crate::config::ModelPrice;
use crate::llm::Usage;
use std::collections::BTreeMap;

/// The configured prices.
pub(crate) struct Prices(BTreeMap<String, ModelPrice>);

impl Prices {
    pub(crate) fn new(prices: &BTreeMap<String, ModelPrice>) -> Prices {
        Prices(prices.clone())
    }

    /// The price of `provider/model`, else of `model`.
    fn of(&self, provider: &str, model: &str) -> Option<&ModelPrice> {
        self.0
            .get(&format!("{provider}/{model}"))
            .or_else(|| self.0.get(model))
    }

    /// The cost of `usage` on that model; `None` without a price for it.
    pub(crate) fn cost(&self, provider: &str, model: &str, usage: &Usage) -> Option<f64> {
        let price = self.of(provider, model)?;
        let cached = usage.cached_input_tokens.unwrap_or(0).min(usage.input_tokens);
        let fresh = usage.input_tokens - cached;
        let per_token = |per_million: f64| per_million / 1_000_000.0;
        Some(
            fresh as f64 * per_token(price.input)
                + cached as f64 * per_token(price.cached_input.unwrap_or(price.input))
                + usage.output_tokens as f64 * per_token(price.output),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_counts_cached_input_at_its_price_and_prefers_the_provider_key() {
        let mut map = BTreeMap::new();
        let price = |input, output, cached_input| ModelPrice {
            input,
            output,
            cached_input,
        };
        map.insert("m".to_string(), price(2.0, 8.0, Some(0.5)));
        map.insert("cheap/m".to_string(), price(1.0, 1.0, None));
        let prices = Prices::new(&map);
        let usage = Usage {
            input_tokens: 1_000,
            output_tokens: 100,
            total_tokens: 1_100,
            reasoning_tokens: Some(40),
            cached_input_tokens: Some(400),
        };
        let cost = prices.cost("openai", "m", &usage).unwrap();
        assert!(
            (cost - (600.0 * 2.0 + 400.0 * 0.5 + 100.0 * 8.0) / 1e6).abs() < 1e-12,
            "{cost}"
        );
        let cost = prices.cost("cheap", "m", &usage).unwrap();
        assert!((cost - 1_100.0 / 1e6).abs() < 1e-12, "{cost}");
        assert_eq!(prices.cost("openai", "other", &usage), None);
    }
}
