//! RFC 6901 JSON Pointers: parsing, and the get / set / remove primitives the
//! `transform` steps are built from (serde_json's own `pointer_mut` cannot create
//! missing parents or append to arrays).

use serde_json::{Map, Value};
use wasmhub_guest::Error;

/// The reference tokens of `pointer`, unescaped (`~1` -> `/`, `~0` -> `~`).
pub fn parse(pointer: &str) -> Result<Vec<String>, Error> {
    if pointer.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = pointer.strip_prefix('/') else {
        return Err(Error::invalid_input(format!(
            "a JSON Pointer must be empty or start with `/`, got `{pointer}` (did you mean `/{pointer}`?)"
        )));
    };
    rest.split('/')
        .map(|t| {
            if t.replace("~0", "").replace("~1", "").contains('~') {
                return Err(Error::invalid_input(format!(
                    "`~` must be written `~0` in pointer `{pointer}`"
                )));
            }
            Ok(t.replace("~1", "/").replace("~0", "~"))
        })
        .collect()
}

/// A JSON type's name for messages.
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// An array index token: digits without a leading zero (RFC 6901).
fn index(token: &str) -> Option<usize> {
    if token == "0"
        || (!token.starts_with('0') && !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit()))
    {
        token.parse().ok()
    } else {
        None
    }
}

/// The value at `tokens`, if any.
pub fn get_mut<'a>(mut v: &'a mut Value, tokens: &[String]) -> Option<&'a mut Value> {
    for t in tokens {
        v = match v {
            Value::Object(map) => map.get_mut(t)?,
            Value::Array(items) => items.get_mut(index(t)?)?,
            _ => return None,
        };
    }
    Some(v)
}

/// Moves the value at `tokens` out of `v`.
pub fn take(mut v: Value, tokens: &[String]) -> Option<Value> {
    get_mut(&mut v, tokens).map(Value::take)
}

/// Removes the value at `tokens` (non-empty) and returns it.
pub fn remove(v: &mut Value, tokens: &[String]) -> Option<Value> {
    let (last, parent) = tokens.split_last()?;
    match get_mut(v, parent)? {
        Value::Object(map) => map.remove(last),
        Value::Array(items) => {
            let i = index(last)?;
            (i < items.len()).then(|| items.remove(i))
        }
        _ => None,
    }
}

/// Puts `value` at `tokens`, creating missing parent objects; `-` or an index equal
/// to the length appends to an array.
pub fn set(v: &mut Value, tokens: &[String], value: Value) -> Result<(), Error> {
    let Some((last, parents)) = tokens.split_last() else {
        *v = value;
        return Ok(());
    };
    let mut cur = v;
    for (depth, t) in parents.iter().enumerate() {
        cur = match cur {
            Value::Object(map) => map.entry(t.clone()).or_insert_with(|| Value::Object(Map::new())),
            Value::Array(items) => {
                let len = items.len();
                let i = index(t).filter(|i| *i < len).ok_or_else(|| {
                    Error::invalid_input(format!(
                        "no array element `{t}` (length {len}) at /{}",
                        tokens[..depth].join("/")
                    ))
                })?;
                &mut items[i]
            }
            Value::Null => {
                *cur = Value::Object(Map::new());
                let Value::Object(map) = cur else {
                    unreachable!("just assigned an object")
                };
                map.entry(t.clone()).or_insert_with(|| Value::Object(Map::new()))
            }
            other => {
                return Err(Error::invalid_input(format!(
                    "cannot go into {} at /{} to set a member",
                    kind(other),
                    tokens[..depth].join("/")
                )));
            }
        };
    }
    match cur {
        Value::Object(map) => {
            map.insert(last.clone(), value);
        }
        Value::Array(items) => {
            let len = items.len();
            match if last == "-" { Some(len) } else { index(last) } {
                Some(i) if i < len => items[i] = value,
                Some(i) if i == len => items.push(value),
                _ => {
                    return Err(Error::invalid_input(format!(
                        "array index {last} is out of range: the array has {len} elements (use {len} or `-` to append)"
                    )));
                }
            }
        }
        Value::Null => {
            let mut map = Map::new();
            map.insert(last.clone(), value);
            *cur = Value::Object(map);
        }
        other => {
            return Err(Error::invalid_input(format!(
                "cannot set member `{last}` inside {}",
                kind(other)
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_and_unescapes() {
        assert_eq!(parse("").unwrap(), Vec::<String>::new());
        assert_eq!(parse("/").unwrap(), vec![String::new()]);
        assert_eq!(
            parse("/a~1b/~01").unwrap(),
            vec!["a/b".to_string(), "~1".to_string()]
        );
        assert!(parse("a").is_err());
        assert!(parse("/a~2").is_err());
    }

    #[test]
    fn indices_follow_the_rfc() {
        assert_eq!(index("0"), Some(0));
        assert_eq!(index("12"), Some(12));
        assert_eq!(index("01"), None);
        assert_eq!(index("-"), None);
        assert_eq!(index("1a"), None);
    }

    #[test]
    fn set_creates_parents_and_appends() {
        let mut v = json!({"list": [1]});
        set(&mut v, &parse("/a/b").unwrap(), json!(1)).unwrap();
        set(&mut v, &parse("/list/-").unwrap(), json!(2)).unwrap();
        set(&mut v, &parse("/list/0").unwrap(), json!(0)).unwrap();
        set(&mut v, &parse("/n").unwrap(), Value::Null).unwrap();
        set(&mut v, &parse("/n/x").unwrap(), json!(true)).unwrap();
        assert_eq!(v, json!({"a": {"b": 1}, "list": [0, 2], "n": {"x": true}}));
        assert!(set(&mut v, &parse("/list/x/y").unwrap(), json!(1)).is_err());
        assert!(set(&mut v, &parse("/a/b/c").unwrap(), json!(1)).is_err());
    }

    #[test]
    fn remove_and_take() {
        let mut v = json!({"a": [1, 2, 3]});
        assert_eq!(remove(&mut v, &parse("/a/1").unwrap()), Some(json!(2)));
        assert_eq!(remove(&mut v, &parse("/a/9").unwrap()), None);
        assert_eq!(remove(&mut v, &parse("/b").unwrap()), None);
        assert_eq!(take(v, &parse("/a").unwrap()), Some(json!([1, 3])));
    }
}
