//! The `calc` plugin: exact arithmetic for language models, which are unreliable at
//! it. Evaluates `+ - * / ^` expressions over rationals (so `0.1 + 0.2` is exactly
//! `3/10`) and reports the exact fraction, a decimal to the requested precision and
//! the nearest double. Parsing and evaluation live in [`expr`].

pub mod expr;

use num_bigint::BigInt;
use num_integer::Integer;
use num_rational::BigRational;
use num_traits::{Signed, ToPrimitive, Zero};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use wasmhub_guest::Error;

/// Most decimal places `digits` may ask for.
pub const MAX_DIGITS: u32 = 1000;
const DEFAULT_DIGITS: u32 = 20;

/// An arithmetic expression to evaluate exactly.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvalInput {
    /// The expression: numbers (`42`, `0.1`, `1.5e3`), `+ - * /`, `^` or `**` with an
    /// integer exponent, parentheses and unary minus. No variables or functions.
    /// Example: `(1/3 + 0.25) * 2^10`.
    #[schemars(length(min = 1, max = 2000))]
    pub expression: String,
    /// Decimal places in `decimal` (default 20). The exact value is always in `fraction`.
    #[schemars(range(max = 1000))]
    pub digits: Option<u32>,
}

/// The exact value of the expression in three forms.
#[derive(Debug, Serialize, JsonSchema, PartialEq)]
pub struct EvalOutput {
    /// The exact value as a reduced fraction (`"7/12"`), or an integer (`"1024"`).
    pub fraction: String,
    /// The value in decimal, rounded half away from zero to `digits` places, without
    /// trailing zeros.
    pub decimal: String,
    /// Whether `decimal` is the exact value (the expansion ends within `digits` places).
    pub decimal_exact: bool,
    /// The nearest double-precision number, or null when the value is out of its range.
    pub float: Option<f64>,
    /// Whether the value is an integer.
    pub is_integer: bool,
}

/// Evaluates the input expression; parse errors and division by zero are `invalid-input`.
pub fn eval(input: EvalInput) -> Result<EvalOutput, Error> {
    let digits = input.digits.unwrap_or(DEFAULT_DIGITS);
    if digits > MAX_DIGITS {
        return Err(Error::invalid_input(format!(
            "digits must be at most {MAX_DIGITS}"
        )));
    }
    let value = expr::evaluate(&input.expression).map_err(|e| Error::invalid_input(e.to_string()))?;
    Ok(render(&value, digits))
}

/// The three forms of `value`.
pub fn render(value: &BigRational, digits: u32) -> EvalOutput {
    let (decimal, decimal_exact) = to_decimal(value, digits);
    let float = value.to_f64().filter(|f| f.is_finite());
    EvalOutput {
        fraction: if value.is_integer() {
            value.numer().to_string()
        } else {
            value.to_string()
        },
        decimal,
        decimal_exact,
        float,
        is_integer: value.is_integer(),
    }
}

/// `value` rounded half away from zero to `digits` places, trailing zeros removed,
/// and whether that is exact.
fn to_decimal(value: &BigRational, digits: u32) -> (String, bool) {
    let scale = num_traits::pow(BigInt::from(10), digits as usize);
    let (quotient, remainder) = (value.numer().abs() * &scale).div_rem(value.denom());
    let exact = remainder.is_zero();
    // Round half away from zero: compare twice the remainder with the denominator.
    let scaled = if (&remainder * 2u8) >= *value.denom() {
        quotient + 1u8
    } else {
        quotient
    };
    let text = scaled.to_string();
    let digits = digits as usize;
    let (int_part, frac_part) = if text.len() > digits {
        text.split_at(text.len() - digits)
    } else {
        ("0", text.as_str())
    };
    let mut out = String::new();
    if value.is_negative() && !scaled.is_zero() {
        out.push('-');
    }
    out.push_str(int_part);
    let frac = format!("{frac_part:0>digits$}");
    let frac = frac.trim_end_matches('0');
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
    (out, exact)
}

// The examples double as tests: `cargo test` runs each one (the macro's generated
// test), and so does the hub when it loads the component.
wasmhub_guest::export_plugin! {
    instructions: "Use calc.eval for any arithmetic whose result matters instead of computing it yourself: \
        it is exact, over rational numbers (0.1 + 0.2 is exactly 3/10, 2^200 keeps every digit). \
        It accepts numbers (42, 0.1, .5, 1.5e3), + - * /, ^ or ** with an integer exponent (2^-1 = 1/2), \
        parentheses and unary minus; -2^2 is -4 and 2^3^2 is 2^9. There are no variables, functions \
        (sqrt, sin, log), percent signs or thousands separators: rewrite 15% of 80 as 15/100*80. \
        Read `fraction` for the exact value; `decimal` is rounded half away from zero to `digits` places \
        (default 20) and `decimal_exact` says whether it is exact.",
    /// Evaluate an arithmetic expression exactly, with rational arithmetic (so 0.1 + 0.2 is exactly 3/10).
    /// Supports + - * /, ^ or ** with integer exponents, parentheses, unary minus and decimals like 1.5e3;
    /// returns the exact fraction, a rounded decimal and the nearest float.
    #[hints(read_only, idempotent)]
    #[example("Adds fractions exactly", {"expression": "1/3 + 1/6"}
        => {"fraction": "1/2", "decimal": "0.5", "decimal_exact": true, "float": 0.5, "is_integer": false})]
    #[example("Decimal literals are exact: 0.1 + 0.2 is 3/10, not 0.30000000000000004", {"expression": "0.1 + 0.2"}
        => {"fraction": "3/10", "decimal": "0.3", "decimal_exact": true, "float": 0.3, "is_integer": false})]
    #[example("Rounds the decimal to `digits` places; the fraction stays exact", {"expression": "2^64 / 3", "digits": 2}
        => {"fraction": "18446744073709551616/3", "decimal": "6148914691236517205.33",
            "decimal_exact": false, "float": 6148914691236517000.0, "is_integer": false})]
    eval => eval,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(expression: &str, digits: Option<u32>) -> EvalOutput {
        eval(EvalInput {
            expression: expression.into(),
            digits,
        })
        .unwrap()
    }

    #[test]
    fn renders_exact_and_rounded_forms() {
        let third = run("1/3", Some(5));
        assert_eq!(
            third,
            EvalOutput {
                fraction: "1/3".into(),
                decimal: "0.33333".into(),
                decimal_exact: false,
                float: Some(1.0 / 3.0),
                is_integer: false,
            }
        );
        let tenth = run("0.1 + 0.2", None);
        assert_eq!(
            (
                tenth.fraction.as_str(),
                tenth.decimal.as_str(),
                tenth.decimal_exact
            ),
            ("3/10", "0.3", true)
        );
        assert_eq!(tenth.float, Some(0.3));
        assert_eq!(run("2/3", Some(3)).decimal, "0.667");
        assert_eq!(run("-2/3", Some(3)).decimal, "-0.667");
        assert_eq!(run("0.125", Some(2)).decimal, "0.13", "half away from zero");
        assert_eq!(run("-0.125", Some(2)).decimal, "-0.13");
        assert_eq!(run("-0.001", Some(2)).decimal, "0", "no negative zero");
        assert_eq!(run("0.999", Some(2)).decimal, "1");
        assert_eq!(run("7/2", Some(0)).decimal, "4");
        assert_eq!(run("1/8", Some(1000)).decimal, "0.125");
        let big = run("2^64", None);
        assert_eq!(
            (big.fraction.as_str(), big.decimal.as_str(), big.is_integer),
            ("18446744073709551616", "18446744073709551616", true)
        );
        assert_eq!(run("10^400", None).float, None, "beyond f64 range");
        assert_eq!(run("-7", None).fraction, "-7");
    }

    #[test]
    fn errors_are_invalid_input() {
        let e = eval(EvalInput {
            expression: "1/(3-3)".into(),
            digits: None,
        })
        .unwrap_err();
        assert_eq!(e, Error::invalid_input("division by zero (at column 2)"));
        let e = eval(EvalInput {
            expression: "1 +".into(),
            digits: None,
        })
        .unwrap_err();
        assert_eq!(
            e,
            Error::invalid_input(
                "syntax error at column 4: expected a number or `(`, found the end of the expression"
            )
        );
        let e = eval(EvalInput {
            expression: "1".into(),
            digits: Some(1001),
        })
        .unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)));
    }

    #[test]
    fn exported_operation_runs_through_the_sdk() {
        let p = wasmhub_plugin();
        let out = p
            .call_value("eval", &json!({"expression": "2^10 / 4", "digits": 2}))
            .unwrap();
        assert_eq!(
            out,
            json!({"fraction": "256", "decimal": "256", "decimal_exact": true, "float": 256.0, "is_integer": true})
        );
        let e = p.call_value("eval", &json!({"expr": "1"})).unwrap_err();
        assert!(
            matches!(e, Error::InvalidInput(ref m) if m.contains("unknown field `expr`")),
            "{e}"
        );
        let spec = &p.specs()[0];
        let schema: serde_json::Value = serde_json::from_str(&spec.input_schema).unwrap();
        assert_eq!(schema["properties"]["expression"]["maxLength"], 2000);
        assert_eq!(schema["required"], json!(["expression"]));
    }

    #[test]
    fn every_operation_has_exact_examples_and_the_plugin_instructions() {
        let plugin = wasmhub_plugin();
        for op in plugin.operations() {
            assert!(
                (1..=3).contains(&op.examples().len()),
                "{}: 1 to 3 examples",
                op.name()
            );
            let exact = op.examples().iter().all(|e| e.output().is_some());
            assert!(
                exact && op.examples_run_at_load(),
                "{}: a pure operation's examples are exact",
                op.name()
            );
        }
        assert!(plugin.instructions().is_some_and(|i| i.contains("rational")));
    }
}
