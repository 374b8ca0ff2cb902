//! The wassette side of `bench/vs-wassette.sh`: a trivial echo tool (the hub's side is `adversary.echo`).

wit_bindgen::generate!({ world: "echo", path: "wit" });

struct Echo;

impl Guest for Echo {
    fn echo(message: String) -> String {
        message
    }
}

export!(Echo);
