use super::*;
use crate::test_dir::{TempDir, file_names as files};

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct Rec {
    id: u64,
    text: String,
}

impl LogRecord for Rec {
    const LOG_NAME: &'static str = "t";

    fn log_id(&self) -> u64 {
        self.id
    }
}

fn recs(range: std::ops::Range<u64>) -> Vec<Rec> {
    range
        .map(|id| Rec {
            id,
            text: format!("r{id}"),
        })
        .collect()
}

fn ids(records: &[Rec]) -> Vec<u64> {
    records.iter().map(|r| r.id).collect()
}

/// A folder holding a closed log of the records `range`, written at 1 ms.
fn closed_log(range: std::ops::Range<u64>) -> TempDir {
    let dir = TempDir::new("log");
    RecordLog::<Rec>::open(&dir)
        .unwrap()
        .append(&recs(range), 1)
        .unwrap();
    dir
}

#[test]
fn batches_fill_segments_and_come_back_newest_first_after_a_reopen() {
    let dir = TempDir::new("log");
    let mut log = RecordLog::<Rec>::open(&dir).unwrap();
    assert_eq!((log.len(), log.last_id()), (0, None));
    let n = SEGMENT_RECORDS as u64 + 510;
    for start in (0..n).step_by(500) {
        log.append(&recs(start..(start + 500).min(n)), 1_000 + start)
            .unwrap();
    }
    assert_eq!(log.len(), n as usize);
    // The batch that crossed the limit stays whole in the first segment.
    assert_eq!(log.segments().len(), 2);
    assert_eq!(log.segments()[1].first, 4500);
    assert_eq!(ids(&log.newest(3).unwrap()), [n - 1, n - 2, n - 3]);
    // A visit decodes records oldest first until told to stop.
    let mut seen = Vec::new();
    let flow = log.visit(&log.segments()[1], |r| {
        seen.push(r.id);
        if seen.len() == 2 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    assert_eq!((seen, flow.unwrap()), (vec![4500, 4501], ControlFlow::Break(())));
    let before: Vec<Segment> = log.segments().iter().copied().collect();
    drop(log);
    let mut log = RecordLog::<Rec>::open(&dir).unwrap();
    let after: Vec<Segment> = log.segments().iter().copied().collect();
    let shape = |s: &[Segment]| {
        s.iter()
            .map(|s| (s.first, s.records, s.bytes, s.last_id))
            .collect::<Vec<_>>()
    };
    assert_eq!(shape(&after), shape(&before));
    assert!(after[0].last_ms <= after[1].last_ms);
    log.append(&recs(n..n + 1), 9_000).unwrap();
    assert_eq!(ids(&log.newest(2).unwrap()), [n, n - 1]);
    assert_eq!(log.last_id(), Some(n));
    assert_eq!(files(&dir).len(), 2, "appends continue in the newest segment");
}

#[test]
fn trimming_drops_whole_segments_then_rewrites_the_oldest_part_of_one() {
    let dir = TempDir::new("log");
    let mut log = RecordLog::<Rec>::open(&dir).unwrap();
    let n = 2 * SEGMENT_RECORDS as u64 + 100;
    for start in (0..n).step_by(SEGMENT_RECORDS / 2) {
        log.append(&recs(start..(start + SEGMENT_RECORDS as u64 / 2).min(n)), 5)
            .unwrap();
    }
    assert_eq!(log.segments().len(), 3);
    // Within the slack nothing goes; past it, down to `keep`.
    log.trim(150, n as usize - 150).unwrap();
    assert_eq!(log.len(), n as usize);
    log.trim(150, 0).unwrap();
    assert_eq!(log.len(), 150);
    let all = log.newest(1_000).unwrap();
    assert_eq!(ids(&all), (n - 150..n).rev().collect::<Vec<_>>());
    // The second segment lost its oldest part; the third is whole.
    let (second, third) = (n - 150, 2 * SEGMENT_RECORDS as u64);
    assert_eq!(
        files(&dir),
        [format!("{second:020}.jsonl"), format!("{third:020}.jsonl")]
    );
    // The rewritten newest segment still takes appends, and a reopen agrees.
    log.append(&recs(n..n + 2), 6).unwrap();
    drop(log);
    let mut log = RecordLog::<Rec>::open(&dir).unwrap();
    assert_eq!(log.len(), 152);
    assert_eq!(log.newest(1).unwrap()[0].id, n + 1);
    log.trim(0, 0).unwrap();
    assert_eq!((log.len(), files(&dir).len()), (0, 0));
    log.append(&recs(0..1), 7).unwrap();
    assert_eq!(log.len(), 1);
}

#[test]
fn a_slack_of_a_segment_or_more_deletes_whole_segments_and_rewrites_none() {
    let dir = TempDir::new("log");
    let mut log = RecordLog::<Rec>::open(&dir).unwrap();
    let seg = SEGMENT_RECORDS as u64;
    let n = 3 * seg + 10;
    for start in (0..n).step_by(SEGMENT_RECORDS) {
        log.append(&recs(start..(start + seg).min(n)), 5).unwrap();
    }
    let before = files(&dir);
    assert_eq!(before.len(), 4);
    // Keep 100 with a segment's slack: the three full segments would leave 10,
    // under `keep`, so two go and the third stays whole (4,106 records).
    log.trim(100, SEGMENT_RECORDS).unwrap();
    assert_eq!(log.len(), (seg + 10) as usize);
    assert_eq!(files(&dir), before[2..], "whole files deleted, none rewritten");
    assert_eq!(ids(&log.newest(1).unwrap()), [n - 1]);
    // The same trim with no slack cuts to exactly `keep`: the oldest segment
    // is rewritten with its newest 90, the newest keeps its 10.
    log.trim(100, 0).unwrap();
    assert_eq!(log.len(), 100);
    assert_eq!(files(&dir), [format!("{:020}.jsonl", n - 100), before[3].clone()]);
    assert_eq!(
        ids(&log.newest(1_000).unwrap()),
        (n - 100..n).rev().collect::<Vec<_>>()
    );
}

#[test]
fn opening_repairs_a_torn_line_and_what_an_interrupted_trim_left() {
    let dir = closed_log(0..10);
    let segment = Segment::path(&dir, 0);
    // A crash during a trim's rewrite (the original and its renamed suffix both
    // there) and during a write (half a line, a temporary file).
    let suffix: Vec<u8> = std::fs::read(&segment).unwrap();
    let lines: Vec<&[u8]> = segment::lines(&suffix).skip(4).collect();
    let mut rewritten = lines.join(&b'\n');
    rewritten.push(b'\n');
    std::fs::write(Segment::path(&dir, 4), &rewritten).unwrap();
    std::fs::write(dir.join("00000000000000000002.tmp"), b"partial").unwrap();
    let torn = Segment::path(&dir, 4);
    let mut bytes = std::fs::read(&torn).unwrap();
    bytes.extend_from_slice(br#"{"id": 10, "te"#);
    std::fs::write(&torn, bytes).unwrap();

    let mut log = RecordLog::<Rec>::open(&dir).unwrap();
    assert_eq!(files(&dir), [format!("{:020}.jsonl", 4)]);
    assert_eq!(ids(&log.newest(100).unwrap()), (4..10).rev().collect::<Vec<_>>());
    assert_eq!(log.last_id(), Some(9));
    log.append(&recs(10..11), 2).unwrap();
    assert_eq!(
        ids(&log.newest(2).unwrap()),
        [10, 9],
        "the next line starts clean"
    );
}

#[test]
fn a_line_that_does_not_decode_is_reported_with_its_file() {
    let dir = closed_log(0..2);
    let path = Segment::path(&dir, 0);
    let text = std::fs::read_to_string(&path).unwrap().replacen("\"r0\"", "7", 1);
    std::fs::write(&path, text).unwrap();
    let log = RecordLog::<Rec>::open(&dir).unwrap();
    assert_eq!(log.last_id(), Some(1), "the newest record still decodes");
    let err = log.newest(5).unwrap_err();
    assert!(matches!(err, StorageError::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains("00000000000000000000.jsonl"), "{err}");
}

#[test]
fn a_move_a_crash_interrupted_is_redone_and_a_table_found_later_is_appended() {
    let data = TempDir::new("migrate");
    let storage = Storage::open(&data).unwrap();
    let dir = data.join("logs/t");
    let table = storage.table("t").unwrap();
    let key = |number| {
        BlockKey {
            ms: 1_000,
            number,
            records: 2,
        }
        .encode()
    };
    table.put(&key(0), &recs(0..2)).unwrap();
    table.put(&key(1), &recs(2..4)).unwrap();
    // A crash while the log was built beside its place: built again.
    let staging = dir.with_extension("migrating");
    std::fs::create_dir_all(&staging).unwrap();
    std::fs::write(Segment::path(&staging, 0), b"{\"id\":0,\"text\":\"r0\"}\n").unwrap();
    let log = open_folder::<Rec>(&storage, &dir).unwrap();
    assert_eq!(ids(&log.newest(10).unwrap()), [3, 2, 1, 0]);
    assert_eq!(
        log.segments()[0].last_ms,
        1_000,
        "the block's time, not the move's"
    );
    assert!(!storage.has_table("t") && !staging.exists());
    drop(log);
    // A table beside the log (an earlier version run since): appended, then dropped.
    let table = storage.table("t").unwrap();
    table.put(&key(2), &recs(4..6)).unwrap();
    let log = open_folder::<Rec>(&storage, &dir).unwrap();
    assert_eq!(ids(&log.newest(10).unwrap()), [5, 4, 3, 2, 1, 0]);
    assert!(!storage.has_table("t"));
    drop(log);
    assert_eq!(
        open_folder::<Rec>(&storage, &dir).unwrap().len(),
        6,
        "nothing moved twice"
    );
}

#[test]
fn a_log_in_memory_keeps_trims_and_reads_as_one_in_files_does() {
    let dir = TempDir::new("log");
    let mut logs = [
        RecordLog::<Rec>::open(&dir).unwrap(),
        RecordLog::<Rec>::in_memory(),
    ];
    let seen: Vec<_> = logs
        .iter_mut()
        .map(|log| {
            for start in (0..6000).step_by(1000) {
                log.append(&recs(start..start + 1000), 5).unwrap();
            }
            // The first segment goes whole, the second loses its oldest 300.
            log.trim(700, 0).unwrap();
            log.append(&recs(6000..6001), 6).unwrap();
            let shape: Vec<_> = log
                .segments()
                .iter()
                .map(|s| (s.first, s.records, s.bytes, s.last_id))
                .collect();
            let mut visited = Vec::new();
            let flow = log
                .visit(&log.segments()[0], |r| {
                    visited.push(r.id);
                    ControlFlow::Continue(())
                })
                .unwrap();
            assert_eq!(flow, ControlFlow::Continue(()));
            let newest = ids(&log.newest(2).unwrap());
            let even = ids(&log.newest_where(2, |r| r.id % 2 == 0).unwrap());
            (shape, visited, newest, even, log.len(), log.next_id())
        })
        .collect();
    let (shape, visited, newest, even, len, next_id) = &seen[0];
    // Each line is `{"id":5300,"text":"r5300"}` and a newline: 27 bytes.
    // The rewritten segment is the newest, and takes the next batch.
    assert_eq!(shape, &[(5300, 701, 701 * 27, 6000)]);
    assert_eq!((visited.len(), visited[0]), (701, 5300));
    assert_eq!((newest, even), (&vec![6000, 5999], &vec![6000, 5998]));
    assert_eq!((*len, *next_id), (701, 6001));
    assert_eq!(seen[1], seen[0], "the same in memory as in files");
    assert_eq!(files(&dir).len(), 1);
}

#[test]
fn ids_continue_past_records_trimmed_away() {
    let mut log = RecordLog::<Rec>::in_memory();
    assert_eq!(log.next_id(), 1);
    log.append(&recs(1..4), 1).unwrap();
    log.trim(0, 0).unwrap();
    assert_eq!((log.len(), log.last_id(), log.next_id()), (0, None, 4));
}
