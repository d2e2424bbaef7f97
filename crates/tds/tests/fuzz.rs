//! Bounded fuzzing of every decoder: valid messages (a PRELOGIN, a LOGIN7, RPCs, a batch, a
//! transaction-manager request, a packet stream) mutated at random (bytes flipped, cut,
//! lengths rewritten, junk appended) and random bytes; no input may panic. CI runs
//! `FUZZ_ITERATIONS` rounds per decoder (default 3,000); a longer run:
//! `FUZZ_ITERATIONS=1000000 cargo test --release -p extentdb-tds --test fuzz`.
//! A failure prints the seed; `FUZZ_SEED=<seed>` replays it.

use engine::rng::SplitMix64;
use tds::rpc::{self, Procedure, int_param, nvarchar_param};

fn iterations() -> u64 {
    std::env::var("FUZZ_ITERATIONS").ok().and_then(|n| n.parse().ok()).unwrap_or(3_000)
}

fn seed() -> u64 {
    std::env::var("FUZZ_SEED").ok().and_then(|n| n.parse().ok()).unwrap_or(0x7D5_F022)
}

/// A mutation of `input`: one to four random edits.
fn mutate(rng: &mut SplitMix64, input: &[u8]) -> Vec<u8> {
    let mut bytes = input.to_vec();
    for _ in 0..=(rng.next_u64() % 4) {
        let pick = rng.next_u64();
        let at = if bytes.is_empty() { 0 } else { (rng.next_u64() as usize) % bytes.len() };
        match pick % 5 {
            0 if !bytes.is_empty() => bytes[at] ^= (rng.next_u64() as u8) | 1,
            1 => bytes.truncate(at),
            2 if at + 1 < bytes.len() => {
                let value = [0x00, 0xFF, 0x7F, 0x80][(rng.next_u64() % 4) as usize];
                bytes[at] = value;
                bytes[at + 1] = value;
            }
            3 => bytes.extend((0..rng.next_u64() % 16).map(|_| rng.next_u64() as u8)),
            _ => bytes = (0..rng.next_u64() % 64).map(|_| rng.next_u64() as u8).collect(),
        }
    }
    bytes
}

/// Feeds mutations of each seed input to `decode`; a panic names the seed and the input.
fn fuzz(name: &str, seeds: &[Vec<u8>], decode: impl Fn(&[u8])) {
    let base = seed();
    for round in 0..iterations() {
        let round_seed = base.wrapping_add(round);
        let mut rng = SplitMix64::new(round_seed);
        let input = mutate(&mut rng, &seeds[(round as usize) % seeds.len()]);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| decode(&input)));
        assert!(
            outcome.is_ok(),
            "{name} panicked: FUZZ_SEED={base} round {round} (seed {round_seed}), input {input:02x?}"
        );
    }
}

fn login_seed() -> Vec<u8> {
    tds::login::encode(&tds::login::Login7 {
        tds_version: 0x7400_0004,
        packet_size: 4096,
        client_pid: 7,
        host_name: "h".into(),
        user_name: "sa".into(),
        password: "Str0ng!Passw0rd".into(),
        app_name: "fuzz".into(),
        interface_name: "fuzz".into(),
        database: "master".into(),
    })
}

fn rpc_seeds() -> Vec<Vec<u8>> {
    vec![
        rpc::encode(
            &Procedure::Id(rpc::SP_EXECUTESQL),
            &[
                ("", false, nvarchar_param("SELECT @P1")),
                ("", false, nvarchar_param("@P1 int")),
                ("@P1", false, int_param(Some(1))),
            ],
        ),
        rpc::encode(
            &Procedure::Name("sp_tables".into()),
            &[("@table_type", false, nvarchar_param("'TABLE'"))],
        ),
        rpc::encode(
            &Procedure::Id(rpc::SP_PREPEXEC),
            &[("@h", true, int_param(None)), ("", false, vec![0x6A, 17, 10, 2, 5, 1, 1, 0, 0, 0])],
        ),
    ]
}

#[test]
fn the_decoders_never_panic() {
    fuzz("prelogin", &[tds::prelogin::encode_response(0)], |b| {
        let _ = tds::prelogin::decode(b);
    });
    fuzz("login7", &[login_seed()], |b| {
        let _ = tds::login::decode(b);
    });
    fuzz("rpc", &rpc_seeds(), |b| {
        let _ = rpc::decode(b);
    });
    let mut batch = vec![22, 0, 0, 0, 18, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0];
    batch.extend(tds::utf16("SELECT 1"));
    fuzz("sql batch", &[batch], |b| {
        let _ = tds::server::batch_text(b);
    });
    let packets = tds::packet::encode_message(tds::packet::SQL_BATCH, &[7u8; 1500], 512, 0);
    fuzz("packets", &[packets], |b| {
        let _ = tds::packet::read_message(&mut &b[..], 4096, 1 << 16);
    });
}

#[test]
fn rpc_and_transaction_requests_never_panic_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let server =
        tsql::server::Server::start(engine::instance::InstanceConfig::new(dir.path())).unwrap();
    let session = std::sync::Mutex::new(tsql::session::Session::new(&server));
    let prepared = std::sync::Mutex::new(tds::server::Prepared::default());
    let rounds = (iterations() / 10).max(100);
    let base = seed();
    let seeds = rpc_seeds();
    for round in 0..rounds {
        let mut rng = SplitMix64::new(base.wrapping_add(round));
        let input = mutate(&mut rng, &seeds[(round as usize) % seeds.len()]);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if let Ok(rpc) = rpc::decode(&input) {
                let mut session = session.lock().unwrap();
                tds::server::run_rpc(&mut session, &mut prepared.lock().unwrap(), rpc);
            }
            let _ = tds::server::transaction_manager(&mut session.lock().unwrap(), &input);
        }));
        assert!(outcome.is_ok(), "FUZZ_SEED={base} round {round}: input {input:02x?}");
    }
}
