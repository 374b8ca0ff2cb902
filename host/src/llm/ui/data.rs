//! `data-<name>` chunks, the one UI chunk type whose `type` is not fixed: written
//! and read by hand, with the same strictness as the derived fixed types.

use serde::de::Error as _;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serializer};
use serde_json::Value;

/// `{"type": "data-<name>", "id"?, "data", "transient"?}`.
pub(super) fn serialize<S: Serializer>(
    name: &impl std::fmt::Display,
    id: &Option<String>,
    data: &Value,
    transient: &Option<bool>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let mut m = serializer.serialize_map(None)?;
    m.serialize_entry("type", &format_args!("data-{name}"))?;
    if let Some(id) = id {
        m.serialize_entry("id", id)?;
    }
    m.serialize_entry("data", data)?;
    if let Some(transient) = transient {
        m.serialize_entry("transient", transient)?;
    }
    m.end()
}

/// The fields of a `data-<name>` chunk: `(name, id, data, transient)`.
pub(super) type Fields = (String, Option<String>, Value, Option<bool>);

pub(super) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Fields, D::Error> {
    let Value::Object(mut obj) = Value::deserialize(deserializer)? else {
        return Err(D::Error::custom("a UI chunk is a JSON object"));
    };
    let name = match obj.remove("type") {
        Some(Value::String(t)) if t.starts_with("data-") => t["data-".len()..].to_string(),
        _ => return Err(D::Error::custom("not a data-<name> chunk")),
    };
    let id = match obj.remove("id") {
        None => None,
        Some(Value::String(id)) => Some(id),
        Some(_) => return Err(D::Error::custom("\"id\" must be a string")),
    };
    let data = obj
        .remove("data")
        .ok_or_else(|| D::Error::missing_field("data"))?;
    let transient = match obj.remove("transient") {
        None => None,
        Some(Value::Bool(b)) => Some(b),
        Some(_) => return Err(D::Error::custom("\"transient\" must be a boolean")),
    };
    if let Some(extra) = obj.keys().next() {
        return Err(D::Error::custom(format!(
            "unexpected key {extra:?} in a data chunk"
        )));
    }
    Ok((name, id, data, transient))
}
