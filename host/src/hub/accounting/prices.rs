//! The cost of a model step from `[accounting.prices]`: per million tokens, input
//! not served from cache, cached input (the input price when none is given) and
//! output (reasoning tokens are part of the output, billed as output).

use super::ModelStep;
use crate::config::ModelPrice;
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

    /// The cost of `step`'s tokens; `None` without usage or a price for its model.
    pub(crate) fn cost(&self, step: &ModelStep) -> Option<f64> {
        let (Some(input), Some(output)) = (step.input_tokens, step.output_tokens) else {
            return None;
        };
        let price = self.of(&step.provider, &step.model)?;
        let cached = step.cached_input_tokens.unwrap_or(0).min(input);
        let fresh = input - cached;
        let per_token = |per_million: f64| per_million / 1_000_000.0;
        Some(
            fresh as f64 * per_token(price.input)
                + cached as f64 * per_token(price.cached_input.unwrap_or(price.input))
                + output as f64 * per_token(price.output),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Usage;
    use std::time::Duration;

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
        let step = |provider, model, usage| ModelStep::measured(provider, model, usage, Duration::ZERO);
        let cost = prices.cost(&step("openai", "m", Some(usage))).unwrap();
        assert!(
            (cost - (600.0 * 2.0 + 400.0 * 0.5 + 100.0 * 8.0) / 1e6).abs() < 1e-12,
            "{cost}"
        );
        let cost = prices.cost(&step("cheap", "m", Some(usage))).unwrap();
        assert!((cost - 1_100.0 / 1e6).abs() < 1e-12, "{cost}");
        assert_eq!(prices.cost(&step("openai", "other", Some(usage))), None);
        assert_eq!(prices.cost(&step("openai", "m", None)), None);
    }
}
