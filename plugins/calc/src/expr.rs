//! The expression language: lexer and recursive-descent evaluator over exact
//! rationals, with the limits that keep one call from running away.
//!
//! Grammar (usual precedence, `^` binds tighter than unary minus and is right
//! associative, so `-2^2 = -4` and `2^3^2 = 2^9`):
//!
//! ```text
//! expr    := term (('+' | '-') term)*
//! term    := unary (('*' | '/') unary)*
//! unary   := ('-' | '+') unary | power
//! power   := primary (('^' | '**') unary)?
//! primary := number | '(' expr ')'
//! number  := digits ['.' digits] [('e' | 'E') ['+' | '-'] digits]  |  '.' digits ...
//! ```

use num_bigint::BigInt;
use num_integer::Integer;
use num_rational::BigRational;
use num_traits::{One, Signed, ToPrimitive, Zero};

/// Longest accepted expression, in bytes.
pub const MAX_EXPRESSION_LEN: usize = 2000;
/// Largest numerator or denominator of any intermediate value, in bits
/// (about 30,000 decimal digits): bounds both time and output size.
pub const MAX_BITS: u64 = 100_000;
/// Largest power of ten in a literal's exponent (`1e400` is fine, `1e99999` is not).
pub const MAX_LITERAL_EXPONENT: i64 = 1000;
/// Deepest nesting of parentheses and unary signs.
pub const MAX_DEPTH: usize = 200;

/// An evaluation failure: what went wrong and at which character (1-based column).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvalError {
    /// The text is not a valid expression.
    Syntax { column: usize, message: String },
    /// The expression is valid but has no value (division by zero, ...) or exceeds a limit.
    Math { column: usize, message: String },
}

impl std::fmt::Display for EvalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EvalError::Syntax { column, message } => write!(f, "syntax error at column {column}: {message}"),
            EvalError::Math { column, message } => write!(f, "{message} (at column {column})"),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(BigRational),
    Plus,
    Minus,
    Star,
    Slash,
    Caret,
    LParen,
    RParen,
    End,
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Num(_) => "a number".into(),
        Tok::Plus => "`+`".into(),
        Tok::Minus => "`-`".into(),
        Tok::Star => "`*`".into(),
        Tok::Slash => "`/`".into(),
        Tok::Caret => "`^`".into(),
        Tok::LParen => "`(`".into(),
        Tok::RParen => "`)`".into(),
        Tok::End => "the end of the expression".into(),
    }
}

/// Splits `src` into tokens, each with its 1-based column (in characters).
fn lex(src: &str) -> Result<Vec<(Tok, usize)>, EvalError> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let column = i + 1;
        let single = match c {
            _ if c.is_whitespace() => {
                i += 1;
                continue;
            }
            '+' => Some(Tok::Plus),
            '-' | '\u{2212}' => Some(Tok::Minus),
            '*' if chars.get(i + 1) == Some(&'*') => {
                out.push((Tok::Caret, column));
                i += 2;
                continue;
            }
            '*' | '\u{00d7}' | '\u{22c5}' => Some(Tok::Star),
            '/' | '\u{00f7}' => Some(Tok::Slash),
            '^' => Some(Tok::Caret),
            '(' => Some(Tok::LParen),
            ')' => Some(Tok::RParen),
            _ => None,
        };
        if let Some(t) = single {
            out.push((t, column));
            i += 1;
            continue;
        }
        if c.is_ascii_digit() || c == '.' {
            let (value, next) = number(&chars, i)?;
            out.push((Tok::Num(value), column));
            i = next;
            continue;
        }
        return Err(EvalError::Syntax {
            column,
            message: format!(
                "unexpected character `{c}`; use numbers, + - * / ^ (or **) and parentheses \
                 (no variables or functions)"
            ),
        });
    }
    out.push((Tok::End, chars.len() + 1));
    Ok(out)
}

/// Reads a decimal literal starting at `start`; returns its exact value and the index after it.
fn number(chars: &[char], start: usize) -> Result<(BigRational, usize), EvalError> {
    let mut i = start;
    let mut digits = String::new();
    let mut frac_len: i64 = 0;
    while i < chars.len() && chars[i].is_ascii_digit() {
        digits.push(chars[i]);
        i += 1;
    }
    if i < chars.len() && chars[i] == '.' {
        i += 1;
        while i < chars.len() && chars[i].is_ascii_digit() {
            digits.push(chars[i]);
            frac_len += 1;
            i += 1;
        }
    }
    if digits.is_empty() {
        return Err(EvalError::Syntax {
            column: start + 1,
            message: "a `.` must be followed by digits".into(),
        });
    }
    let mut exponent: i64 = 0;
    if i < chars.len() && (chars[i] == 'e' || chars[i] == 'E') {
        let e_column = i + 1;
        i += 1;
        let negative = match chars.get(i) {
            Some('-') => {
                i += 1;
                true
            }
            Some('+') => {
                i += 1;
                false
            }
            _ => false,
        };
        let exp_start = i;
        while i < chars.len() && chars[i].is_ascii_digit() {
            i += 1;
        }
        let text: String = chars[exp_start..i].iter().collect();
        if text.is_empty() {
            return Err(EvalError::Syntax {
                column: e_column,
                message: "`e` must be followed by an exponent".into(),
            });
        }
        exponent = match text.parse::<i64>() {
            Ok(e) if e <= MAX_LITERAL_EXPONENT => e,
            _ => {
                return Err(EvalError::Math {
                    column: e_column,
                    message: format!("literal exponent is larger than {MAX_LITERAL_EXPONENT}"),
                });
            }
        };
        if negative {
            exponent = -exponent;
        }
    }
    if i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
        return Err(EvalError::Syntax {
            column: i + 1,
            message: "malformed number".into(),
        });
    }
    let mantissa: BigInt = digits.parse().expect("only ASCII digits were collected");
    let scale = exponent - frac_len;
    let ten = BigInt::from(10);
    let value = if scale >= 0 {
        BigRational::from_integer(mantissa * num_traits::pow(ten, scale as usize))
    } else {
        BigRational::new(mantissa, num_traits::pow(ten, (-scale) as usize))
    };
    Ok((value, i))
}

struct Parser {
    toks: Vec<(Tok, usize)>,
    pos: usize,
    depth: usize,
}

/// Evaluates `src` exactly.
pub fn evaluate(src: &str) -> Result<BigRational, EvalError> {
    if src.len() > MAX_EXPRESSION_LEN {
        return Err(EvalError::Math {
            column: 1,
            message: format!("expression is longer than {MAX_EXPRESSION_LEN} bytes"),
        });
    }
    let toks = lex(src)?;
    if toks.len() == 1 {
        return Err(EvalError::Syntax {
            column: 1,
            message: "the expression is empty".into(),
        });
    }
    let mut p = Parser {
        toks,
        pos: 0,
        depth: 0,
    };
    let value = p.expr()?;
    let (t, column) = p.peek();
    if *t != Tok::End {
        let message = if *t == Tok::RParen {
            "unmatched `)`".to_string()
        } else {
            format!(
                "expected an operator, found {} (write `*` for multiplication)",
                describe(t)
            )
        };
        return Err(EvalError::Syntax { column, message });
    }
    Ok(value)
}

fn bits(v: &BigRational) -> u64 {
    v.numer().bits().max(v.denom().bits())
}

fn bounded(v: BigRational, column: usize) -> Result<BigRational, EvalError> {
    if bits(&v) > MAX_BITS {
        return Err(EvalError::Math {
            column,
            message: format!("intermediate result has more than {MAX_BITS} bits (about 30,000 digits)"),
        });
    }
    Ok(v)
}

impl Parser {
    fn peek(&self) -> (&Tok, usize) {
        let (t, c) = &self.toks[self.pos];
        (t, *c)
    }

    fn advance(&mut self) -> (Tok, usize) {
        let t = self.toks[self.pos].clone();
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        t
    }

    fn enter(&mut self, column: usize) -> Result<(), EvalError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(EvalError::Math {
                column,
                message: format!("nesting deeper than {MAX_DEPTH} levels"),
            });
        }
        Ok(())
    }

    fn expr(&mut self) -> Result<BigRational, EvalError> {
        let mut acc = self.term()?;
        loop {
            let (t, column) = self.peek();
            let add = match t {
                Tok::Plus => true,
                Tok::Minus => false,
                _ => return Ok(acc),
            };
            self.advance();
            let rhs = self.term()?;
            acc = bounded(if add { acc + rhs } else { acc - rhs }, column)?;
        }
    }

    fn term(&mut self) -> Result<BigRational, EvalError> {
        let mut acc = self.unary()?;
        loop {
            let (t, column) = self.peek();
            let mul = match t {
                Tok::Star => true,
                Tok::Slash => false,
                _ => return Ok(acc),
            };
            self.advance();
            let rhs = self.unary()?;
            acc = if mul {
                bounded(acc * rhs, column)?
            } else if rhs.is_zero() {
                return Err(EvalError::Math {
                    column,
                    message: "division by zero".into(),
                });
            } else {
                bounded(acc / rhs, column)?
            };
        }
    }

    fn unary(&mut self) -> Result<BigRational, EvalError> {
        let (t, column) = self.peek();
        match t {
            Tok::Minus | Tok::Plus => {
                let negate = *t == Tok::Minus;
                self.advance();
                self.enter(column)?;
                let v = self.unary()?;
                self.depth -= 1;
                Ok(if negate { -v } else { v })
            }
            _ => self.power(),
        }
    }

    fn power(&mut self) -> Result<BigRational, EvalError> {
        let base = self.primary()?;
        let (t, column) = self.peek();
        if *t != Tok::Caret {
            return Ok(base);
        }
        self.advance();
        self.enter(column)?;
        let exponent = self.unary()?;
        self.depth -= 1;
        pow(base, exponent, column)
    }

    fn primary(&mut self) -> Result<BigRational, EvalError> {
        let (t, column) = self.advance();
        match t {
            Tok::Num(v) => Ok(v),
            Tok::LParen => {
                self.enter(column)?;
                let v = self.expr()?;
                self.depth -= 1;
                let (close, close_column) = self.advance();
                if close != Tok::RParen {
                    return Err(EvalError::Syntax {
                        column: close_column,
                        message: format!(
                            "expected `)` to close the `(` at column {column}, found {}",
                            describe(&close)
                        ),
                    });
                }
                Ok(v)
            }
            other => Err(EvalError::Syntax {
                column,
                message: format!("expected a number or `(`, found {}", describe(&other)),
            }),
        }
    }
}

/// `base ^ exponent` for an integer exponent, refusing results past [`MAX_BITS`]
/// before computing them.
fn pow(base: BigRational, exponent: BigRational, column: usize) -> Result<BigRational, EvalError> {
    if !exponent.is_integer() {
        return Err(EvalError::Math {
            column,
            message: "exponent must be an integer (fractional powers are generally irrational)".into(),
        });
    }
    let e = exponent.to_integer();
    if base.is_zero() {
        return match e.sign() {
            num_bigint::Sign::Minus => Err(EvalError::Math {
                column,
                message: "division by zero (0 to a negative power)".into(),
            }),
            num_bigint::Sign::NoSign => Ok(BigRational::one()),
            num_bigint::Sign::Plus => Ok(BigRational::zero()),
        };
    }
    if base.abs().is_one() {
        let odd = e.is_odd();
        return Ok(if base.is_negative() && odd {
            -BigRational::one()
        } else {
            BigRational::one()
        });
    }
    let too_large = || EvalError::Math {
        column,
        message: format!(
            "power too large: the result would have more than {MAX_BITS} bits (about 30,000 digits)"
        ),
    };
    let magnitude = e.abs().to_u64().ok_or_else(too_large)?;
    // |base| != 0, 1: bits(base^n) >= (bits(base) - 1) * n, and it is exact enough to refuse early.
    let estimate = bits(&base).saturating_sub(1).max(1).saturating_mul(magnitude);
    if estimate > MAX_BITS {
        return Err(too_large());
    }
    let magnitude = magnitude as usize;
    let raised = BigRational::new(
        num_traits::pow(base.numer().clone(), magnitude),
        num_traits::pow(base.denom().clone(), magnitude),
    );
    let raised = if e.is_negative() { raised.recip() } else { raised };
    bounded(raised, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> BigRational {
        let (n, d) = s.split_once('/').unwrap_or((s, "1"));
        BigRational::new(n.parse().unwrap(), d.parse().unwrap())
    }

    fn ok(src: &str) -> BigRational {
        evaluate(src).unwrap_or_else(|e| panic!("{src}: {e}"))
    }

    #[test]
    fn arithmetic_is_exact() {
        assert_eq!(ok("0.1 + 0.2"), q("3/10"));
        assert_eq!(ok("1/3 + 1/6"), q("1/2"));
        assert_eq!(ok("2 * (3 + 4) - 5 / 2"), q("23/2"));
        assert_eq!(ok("10 - 4 - 3"), q("3"), "left associative");
        assert_eq!(ok("100 / 10 / 5"), q("2"), "left associative");
        assert_eq!(ok("1.5e3 + 2E-2"), q("75001/50"));
        assert_eq!(ok(".5 * 4"), q("2"));
        assert_eq!(
            ok("99999999999999999999 * 99999999999999999999"),
            q("9999999999999999999800000000000000000001")
        );
    }

    #[test]
    fn powers_and_signs() {
        assert_eq!(ok("2^10"), q("1024"));
        assert_eq!(ok("2**10"), q("1024"));
        assert_eq!(ok("2^3^2"), q("512"), "right associative");
        assert_eq!(ok("-2^2"), q("-4"), "power binds tighter than unary minus");
        assert_eq!(ok("(-2)^3"), q("-8"));
        assert_eq!(ok("2^-2"), q("1/4"));
        assert_eq!(ok("(2/3)^-3"), q("27/8"));
        assert_eq!(ok("0^0"), q("1"));
        assert_eq!(ok("(-1)^100000000001"), q("-1"));
        assert_eq!(ok("--3"), q("3"));
        assert_eq!(ok("2 × 3 ÷ 4 − 1"), q("1/2"));
    }

    fn err(src: &str) -> EvalError {
        evaluate(src).expect_err(src)
    }

    #[test]
    fn syntax_errors_name_the_column() {
        assert_eq!(
            err("1 + * 2"),
            EvalError::Syntax {
                column: 5,
                message: "expected a number or `(`, found `*`".into()
            }
        );
        assert!(matches!(err("(1 + 2"), EvalError::Syntax { column: 7, .. }));
        assert!(
            matches!(err("1 + 2)"), EvalError::Syntax { column: 6, message } if message == "unmatched `)`")
        );
        assert!(matches!(err("2 x 3"), EvalError::Syntax { column: 3, message } if message.contains("`x`")));
        assert!(matches!(err("2 (3)"), EvalError::Syntax { column: 3, message } if message.contains("`*`")));
        assert!(matches!(err("1.2.3"), EvalError::Syntax { column: 4, .. }));
        assert!(matches!(err(""), EvalError::Syntax { column: 1, .. }));
        assert!(matches!(err("   "), EvalError::Syntax { .. }));
        assert!(matches!(err("1e"), EvalError::Syntax { column: 2, .. }));
        assert_eq!(
            err("1 + * 2").to_string(),
            "syntax error at column 5: expected a number or `(`, found `*`"
        );
    }

    #[test]
    fn math_errors_and_limits() {
        assert_eq!(
            err("1 / (2 - 2)"),
            EvalError::Math {
                column: 3,
                message: "division by zero".into()
            }
        );
        assert!(
            matches!(err("0^-1"), EvalError::Math { message, .. } if message.contains("division by zero"))
        );
        assert!(matches!(err("2^0.5"), EvalError::Math { message, .. } if message.contains("integer")));
        assert!(
            matches!(err("2^100001"), EvalError::Math { message, .. } if message.contains("power too large"))
        );
        assert!(matches!(err("3^99999999999999999999999"), EvalError::Math { .. }));
        assert_eq!(ok("2^99999").numer().bits(), 100_000);
        assert!(matches!(err("2^99999 * 4"), EvalError::Math { message, .. } if message.contains("bits")));
        assert!(matches!(err("1e1001"), EvalError::Math { .. }));
        assert!(
            matches!(err(&"1+".repeat(1001)), EvalError::Math { message, .. } if message.contains("longer"))
        );
        let deep = format!("{}1{}", "(".repeat(MAX_DEPTH + 1), ")".repeat(MAX_DEPTH + 1));
        assert!(matches!(err(&deep), EvalError::Math { message, .. } if message.contains("nesting")));
        let fine = format!("{}1{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
        assert_eq!(ok(&fine), q("1"));
        assert!(matches!(err(&"-".repeat(MAX_DEPTH + 1)), EvalError::Math { .. }));
    }
}
