//! The `weather` plugin: the current weather of a place from weatherapi.com
//! (`GET /v1/current.json?q=PLACE`), an API that needs a key. The key is declared
//! in `weather.toml` as a secret the hub injects (`key` header, only on requests to
//! the API's host), so this code never holds it: it sends the request without the
//! key and the host adds it after its network checks. An unset key fails the call
//! with `missing_secret` before anything is sent.
//!
//! Everything but the round trip (the request URL, reading the answer, error
//! mapping) is plain code, unit-tested natively; the round trip lives in `net`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use wasmhub_guest::Error;

#[cfg(target_arch = "wasm32")]
mod net;

/// The API's base URL unless `WEATHER_API_URL` names another.
pub const DEFAULT_API_URL: &str = "https://api.weatherapi.com";

/// Where to look.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CurrentInput {
    /// A place: a city name ("Paris"), "lat,lon", a postcode or an airport code.
    #[schemars(length(min = 1, max = 200))]
    pub place: String,
}

/// The current weather.
#[derive(Debug, Serialize, JsonSchema, PartialEq)]
pub struct Current {
    /// The place the API matched ("Paris, France").
    pub place: String,
    /// Temperature in degrees Celsius.
    pub temp_c: f64,
    /// The sky, in words ("Partly cloudy").
    pub condition: String,
    /// Wind speed in km/h.
    pub wind_kph: f64,
}

/// The request URL for `place` at `base` (no key: the host adds it).
pub fn request_url(base: &str, place: &str) -> Result<String, Error> {
    let place = place.trim();
    if place.is_empty() {
        return Err(Error::invalid_input("place is empty"));
    }
    let encoded: String = place
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b',' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    Ok(format!(
        "{}/v1/current.json?q={encoded}",
        base.trim_end_matches('/')
    ))
}

/// The answer of the API (`status`, JSON `body`) as the operation's output.
pub fn read_answer(status: u16, body: &str) -> Result<Current, Error> {
    let v: Value = serde_json::from_str(body).map_err(|_| {
        Error::failed(format!(
            "the weather API answered {status} with a body that is not JSON"
        ))
    })?;
    let message = v["error"]["message"].as_str();
    match (status, message) {
        (200, None) => {}
        (401 | 403, m) => {
            return Err(Error::forbidden(format!(
                "the weather API refused the key ({}); the operator sets it with `wasmhub secret set weather WEATHER_API_KEY`",
                m.unwrap_or("no reason given")
            )));
        }
        (400, Some(m)) => {
            return Err(Error::not_found(format!(
                "the weather API found no such place: {m}"
            )));
        }
        (s, m) => {
            return Err(Error::failed(format!(
                "the weather API answered {s}: {}",
                m.unwrap_or("no reason given")
            )));
        }
    }
    let name = v["location"]["name"].as_str().unwrap_or_default();
    let country = v["location"]["country"].as_str().unwrap_or_default();
    let number = |p: &str| v.pointer(p).and_then(Value::as_f64);
    Ok(Current {
        place: [name, country]
            .iter()
            .filter(|s| !s.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join(", "),
        temp_c: number("/current/temp_c").ok_or_else(|| Error::failed("the answer has no current.temp_c"))?,
        condition: v["current"]["condition"]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        wind_kph: number("/current/wind_kph").unwrap_or(0.0),
    })
}

/// The current weather at `input.place`.
pub fn current(input: CurrentInput) -> Result<Current, Error> {
    let base = std::env::var("WEATHER_API_URL").unwrap_or_else(|_| DEFAULT_API_URL.to_string());
    let url = request_url(&base, &input.place)?;
    #[cfg(target_arch = "wasm32")]
    {
        let (status, body) = net::get(&url)?;
        read_answer(status, &body)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        Err(Error::failed(format!(
            "cannot GET {url}: the network is only reachable from the wasm component"
        )))
    }
}

// `current` reaches the network (open_world), so its example never runs at load.
wasmhub_guest::export_plugin! {
    instructions: "Current weather only (no forecast). A forbidden error means the operator has not set a \
        working API key; retrying will not help.",
    /// The current weather (temperature in °C, sky, wind) at a place: a city, "lat,lon", a postcode or an airport code.
    #[hints(read_only, open_world)]
    #[example("The weather in Paris now", {"place": "Paris"})]
    current => current,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_carries_the_place_and_never_a_key() {
        assert_eq!(
            request_url("http://127.0.0.1:9/", "São Paulo").unwrap(),
            "http://127.0.0.1:9/v1/current.json?q=S%C3%A3o%20Paulo"
        );
        assert!(request_url(DEFAULT_API_URL, " ").is_err());
    }

    #[test]
    fn answers_become_output_or_errors_a_model_can_act_on() {
        let ok = r#"{"location":{"name":"Paris","country":"France"},
                     "current":{"temp_c":12.5,"wind_kph":9.0,"condition":{"text":"Sunny"}}}"#;
        assert_eq!(
            read_answer(200, ok).unwrap(),
            Current {
                place: "Paris, France".into(),
                temp_c: 12.5,
                condition: "Sunny".into(),
                wind_kph: 9.0
            }
        );
        let refused =
            read_answer(401, r#"{"error":{"code":2006,"message":"API key is invalid."}}"#).unwrap_err();
        assert!(format!("{refused:?}").contains("wasmhub secret set weather WEATHER_API_KEY"));
        assert!(
            read_answer(
                400,
                r#"{"error":{"code":1006,"message":"No matching location found."}}"#
            )
            .is_err()
        );
        assert!(read_answer(200, "<html>").is_err());
    }
}
