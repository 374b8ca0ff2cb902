//! Agent profiles through the real router: a named agent's prompt, model and
//! sampling parameters reach the provider (asserted on the scripted upstream's
//! received body), the default profile sends none of them, and the agents folder
//! is followed without a restart, a broken file left out naming its field.

use crate::support::chat::{MODEL, chunks, finish, hub_with, plugins, post_chat, submit, text_step, user};
use crate::support::runtime::Scratch;
use crate::support::upstream::Upstream;
use crate::support::wait;
use serde_json::{Value, json};
use wasmhub::config::{AgentProfileConfig, ModelChoice};

fn writer() -> AgentProfileConfig {
    AgentProfileConfig {
        name: "writer".into(),
        description: "Writes short texts".into(),
        model: Some(ModelChoice::One(MODEL.into())),
        temperature: Some(0.25),
        top_p: Some(0.5),
        max_output_tokens: Some(77),
        system_prompt: Some("You write haiku.".into()),
        ..AgentProfileConfig::default()
    }
}

#[tokio::test]
async fn a_named_agents_prompt_and_sampling_reach_the_provider() {
    let upstream = Upstream::start().await;
    let hub = hub_with(&upstream, plugins(&[]), |c| {
        c.agent.model = None;
        c.agents = vec![writer()];
    })
    .await;
    upstream.push(text_step("Autumn wind."));
    let mut body = submit("profile-1", vec![user("u1", "a poem")]);
    body["agent"] = json!("writer");
    let chunks = chunks(post_chat(hub.addr, &body).await).await;
    let (_, meta) = finish(&chunks);
    assert_eq!(
        (&meta["agent"], &meta["model"]),
        (&json!("writer"), &json!(MODEL))
    );
    let sent = upstream.requests()[0].json();
    assert_eq!(
        (&sent["temperature"], &sent["top_p"], &sent["max_tokens"]),
        (&json!(0.25), &json!(0.5), &json!(77))
    );
    assert!(
        sent["messages"][0]["content"]
            .as_str()
            .unwrap()
            .starts_with("You write haiku."),
        "{sent}"
    );
    // Without a model of its own or in [agent], the default profile has none.
    let resp = post_chat(hub.addr, &submit("profile-2", vec![user("u1", "hi")])).await;
    assert_eq!(resp.status, 400);
    assert_eq!(resp.json().await["error"]["code"], "no_model");
    let mut unknown = submit("profile-3", vec![user("u1", "hi")]);
    unknown["agent"] = json!("nobody");
    let resp = post_chat(hub.addr, &unknown).await;
    assert_eq!(resp.status, 404);
    let error = resp.json().await;
    assert_eq!(error["error"]["code"], "agent_not_found", "{error}");
    assert_eq!(upstream.requests().len(), 1, "refused requests reach no provider");
}

#[tokio::test]
async fn the_default_profile_sends_no_sampling_parameter_unless_configured() {
    let upstream = Upstream::start().await;
    let hub = hub_with(&upstream, plugins(&[]), |_| {}).await;
    upstream.push(text_step("Hi."));
    chunks(post_chat(hub.addr, &submit("profile-4", vec![user("u1", "hi")])).await).await;
    let sent = upstream.requests()[0].json();
    for key in ["temperature", "top_p", "max_tokens"] {
        assert!(sent.get(key).is_none(), "{key} was sent: {sent}");
    }
    let hub = hub_with(&upstream, plugins(&[]), |c| c.agent.temperature = Some(0.0)).await;
    upstream.push(text_step("Hi."));
    chunks(post_chat(hub.addr, &submit("profile-5", vec![user("u1", "hi")])).await).await;
    assert_eq!(upstream.requests()[1].json()["temperature"], json!(0.0));
}

/// The named agents of `hub` and the folder's rejected files.
fn profiles(hub: &crate::support::hub::Hub) -> (Vec<String>, Vec<String>) {
    let set = hub.app.agent.profiles();
    (
        set.named().map(|p| p.name.clone()).collect(),
        set.rejected().iter().map(ToString::to_string).collect(),
    )
}

/// Writes `text` to `dir/name` as an editor's atomic save does.
fn save(dir: &Scratch, name: &str, text: &str) {
    let temporary = dir.path(&format!(".{name}.tmp"));
    std::fs::write(&temporary, text).unwrap();
    std::fs::rename(&temporary, dir.path(name)).unwrap();
}

#[tokio::test]
async fn the_agents_folder_is_followed_and_a_broken_file_is_left_out() {
    let upstream = Upstream::start().await;
    let dir = Scratch::new("agents");
    save(
        &dir,
        "helper.md",
        "+++\ndescription = \"Helps\"\n+++\nYou help.\n",
    );
    let folder = dir.0.clone();
    let hub = hub_with(&upstream, plugins(&[]), |c| {
        c.agents = vec![writer()];
        c.agents_dir = folder;
    })
    .await;
    assert_eq!(profiles(&hub), (vec!["helper".into(), "writer".into()], vec![]));
    save(&dir, "later.md", "+++\ntemperature = 0.7\n+++\nLater.\n");
    save(&dir, "broken.md", "+++\ntemperature = 9\n+++\n");
    let broken = format!(
        "{}: temperature: 9 is outside 0..=2 (agent.temperature_limit)",
        dir.path("broken.md").display()
    );
    wait::until_seen("the folder's changes to be applied", || async {
        let seen = profiles(&hub);
        let expected = (
            vec!["helper".to_string(), "later".into(), "writer".into()],
            vec![broken.clone()],
        );
        if seen == expected { Ok(()) } else { Err(seen) }
    })
    .await;
    // GET /api/agents: the default profile first, the sources, the files left out.
    let listed = crate::support::client::send(hub.addr, http::Method::GET, "/api/agents", None, &[])
        .await
        .json()
        .await;
    let names: Vec<&str> = listed["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["default", "helper", "later", "writer"], "{listed}");
    assert_eq!(listed["agents"][2]["source"], "file");
    assert_eq!(listed["agents"][2]["temperature"], 0.7);
    assert_eq!(listed["agents"][3]["source"], "config");
    assert_eq!(
        listed["rejected"][0]["file"],
        json!(dir.path("broken.md").display().to_string())
    );
    // The new profile runs with its own sampling.
    upstream.push(text_step("Done."));
    let mut body = submit("profile-6", vec![user("u1", "go")]);
    body["agent"] = json!("later");
    chunks(post_chat(hub.addr, &body).await).await;
    let sent: Value = upstream.requests()[0].json();
    assert_eq!(sent["temperature"], json!(0.7));
    std::fs::remove_file(dir.path("helper.md")).unwrap();
    wait::until_seen("helper.md's removal to be applied", || async {
        let (named, _) = profiles(&hub);
        if named == ["later", "writer"] {
            Ok(())
        } else {
            Err(named)
        }
    })
    .await;
}
