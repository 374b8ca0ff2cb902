//! Test guest: a valid component of another world (`example:greeter`), which the
//! loader must reject with the export it expected.

wit_bindgen::generate!({ world: "greeter", path: "wit" });

struct Greeter;

impl exports::example::greeter::greet::Guest for Greeter {
    fn hello(name: String) -> String {
        format!("hello {name}")
    }
}

export!(Greeter);
