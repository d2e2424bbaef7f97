//! Logins: the `sa` login, created at the server's first start with the password from
//! `EXTENTDB_SA_PASSWORD`, checked against SQL Server's password policy, and kept as a salted
//! Argon2id hash (PHC string) in the file `logins` of the data directory, one
//! `name<TAB>hash` line per login. The password itself is never stored.
//!
//! Policy (SQL Server on Linux with CHECK_POLICY): at least 8 characters, from at least three
//! of: upper case letters, lower case letters, digits, other characters. A shorter password
//! is error 15116, a simpler one 15118.

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use engine::SqlError;
use parking_lot::Mutex;
use rand_core::OsRng;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

/// The file that holds the login hashes.
pub const LOGINS_FILE: &str = "logins";
/// The environment variable with sa's password for the first start.
pub const SA_PASSWORD_VAR: &str = "EXTENTDB_SA_PASSWORD";

/// 15116 / 15118 when `password` does not meet the policy.
pub fn check_policy(password: &str) -> Result<(), SqlError> {
    if password.chars().count() < 8 {
        return Err(SqlError::new(
            15116,
            16,
            1,
            "Password validation failed. The password does not meet the operating system policy requirements because it is too short.",
        ));
    }
    let classes = [
        password.chars().any(|c| c.is_uppercase()),
        password.chars().any(|c| c.is_lowercase()),
        password.chars().any(|c| c.is_ascii_digit()),
        password.chars().any(|c| !c.is_alphanumeric()),
    ];
    if classes.iter().filter(|c| **c).count() < 3 {
        return Err(SqlError::new(
            15118,
            16,
            1,
            "Password validation failed. The password does not meet the operating system policy requirements because it is not complex enough.",
        ));
    }
    Ok(())
}

/// A salted Argon2id hash of `password`, as a PHC string.
pub fn hash_password(password: &str) -> Result<String, SqlError> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| SqlError::new(15118, 16, 1, format!("The password could not be hashed: {e}")))
}

/// Whether `password` matches the stored hash.
pub fn verify_password(stored: &str, password: &str) -> bool {
    PasswordHash::new(stored)
        .is_ok_and(|hash| Argon2::default().verify_password(password.as_bytes(), &hash).is_ok())
}

/// The logins of a data directory.
pub struct Logins {
    path: PathBuf,
    entries: Vec<(String, String)>,
    verifier: Verifier,
    /// Passwords already verified in this process, as keyed BLAKE2b digests (memory only):
    /// a login that succeeded once is checked without Argon2 again.
    verified: Mutex<HashMap<String, Vec<u8>>>,
    /// The digest key, random per process.
    key: [u8; 32],
}

/// Argon2 verification runs on one thread. Each verification allocates its 19 MiB memory
/// cost, and the allocator keeps a thread's freed memory for that thread's later use; on one
/// thread the process holds one such block, not one per connection thread (bug fix: 200 idle
/// connections cost 17 MB each, measured with `bench tds`).
struct Verifier {
    requests: Mutex<mpsc::Sender<(String, String, mpsc::Sender<bool>)>>,
}

impl Verifier {
    fn start() -> Verifier {
        let (send, receive) = mpsc::channel::<(String, String, mpsc::Sender<bool>)>();
        std::thread::Builder::new()
            .name("extentdb-login-hash".into())
            .spawn(move || {
                for (stored, password, reply) in receive {
                    let _ = reply.send(verify_password(&stored, &password));
                }
            })
            .expect("the login hashing thread starts");
        Verifier { requests: Mutex::new(send) }
    }

    fn verify(&self, stored: &str, password: &str) -> bool {
        let (reply, answer) = mpsc::channel();
        let sent = self.requests.lock().send((stored.to_string(), password.to_string(), reply));
        sent.is_ok() && answer.recv().unwrap_or(false)
    }
}

fn digest(key: &[u8; 32], user: &str, password: &str) -> Vec<u8> {
    use blake2::Digest;
    let mut hasher = blake2::Blake2b512::new();
    hasher.update(key);
    hasher.update(user.to_lowercase().as_bytes());
    hasher.update([0]);
    hasher.update(password.as_bytes());
    hasher.finalize().to_vec()
}

impl Logins {
    /// Opens the logins of `dir`; at the first start (no file), creates `sa` with `sa_password`
    /// (error when it is absent or fails the policy; nothing is written then).
    pub fn open_or_create(dir: &Path, sa_password: Option<&str>) -> Result<Logins, SqlError> {
        let path = dir.join(LOGINS_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let entries = text
                    .lines()
                    .filter_map(|l| l.split_once('\t'))
                    .map(|(name, hash)| (name.to_string(), hash.to_string()))
                    .collect();
                Ok(Logins::with_entries(path, entries))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let password = sa_password.ok_or_else(|| {
                    SqlError::new(
                        15116,
                        16,
                        1,
                        format!("The first start needs sa's password in {SA_PASSWORD_VAR}: Password validation failed. The password does not meet the operating system policy requirements because it is too short."),
                    )
                })?;
                check_policy(password)?;
                let logins =
                    Logins::with_entries(path, vec![("sa".into(), hash_password(password)?)]);
                logins.save()?;
                Ok(logins)
            }
            Err(e) => Err(SqlError::new(5123, 16, 1, format!("read {}: {e}", path.display()))),
        }
    }

    fn with_entries(path: PathBuf, entries: Vec<(String, String)>) -> Logins {
        let mut key = [0u8; 32];
        rand_core::RngCore::fill_bytes(&mut OsRng, &mut key);
        Logins {
            path,
            entries,
            verifier: Verifier::start(),
            verified: Mutex::new(HashMap::new()),
            key,
        }
    }

    fn save(&self) -> Result<(), SqlError> {
        let text: String = self.entries.iter().map(|(n, h)| format!("{n}\t{h}\n")).collect();
        let temp = self.path.with_extension("new");
        let io = |e: std::io::Error| {
            SqlError::new(5123, 16, 1, format!("write {}: {e}", self.path.display()))
        };
        std::fs::write(&temp, text).map_err(io)?;
        std::fs::rename(&temp, &self.path).map_err(io)
    }

    /// Whether `user` exists and `password` is its password.
    pub fn authenticate(&self, user: &str, password: &str) -> bool {
        let Some((name, hash)) =
            self.entries.iter().find(|(name, _)| name.eq_ignore_ascii_case(user))
        else {
            return false;
        };
        let digest = digest(&self.key, name, password);
        if self.verified.lock().get(name) == Some(&digest) {
            return true;
        }
        let good = self.verifier.verify(hash, password);
        if good {
            self.verified.lock().insert(name.clone(), digest);
        }
        good
    }

    /// Whether a login named `user` exists.
    pub fn exists(&self, user: &str) -> bool {
        self.entries.iter().any(|(name, _)| name.eq_ignore_ascii_case(user))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_refuses_short_and_simple_passwords() {
        assert_eq!(check_policy("").unwrap_err().number, 15116);
        assert_eq!(check_policy("Ab1!").unwrap_err().number, 15116);
        assert_eq!(check_policy("alllowercase").unwrap_err().number, 15118);
        assert_eq!(check_policy("lower1234").unwrap_err().number, 15118);
        assert!(check_policy("Str0ng!Passw0rd").is_ok());
        assert!(check_policy("lower1234!").is_ok());
    }

    #[test]
    fn sa_is_stored_hashed_and_authenticates() {
        let dir = tempfile::tempdir().unwrap();
        assert!(Logins::open_or_create(dir.path(), None).is_err());
        assert!(Logins::open_or_create(dir.path(), Some("weak")).is_err());
        assert!(!dir.path().join(LOGINS_FILE).exists(), "nothing written for a refused password");
        let logins = Logins::open_or_create(dir.path(), Some("Str0ng!Passw0rd")).unwrap();
        let stored = std::fs::read_to_string(dir.path().join(LOGINS_FILE)).unwrap();
        assert!(
            !stored.contains("Str0ng!Passw0rd") && stored.starts_with("sa\t$argon2id$"),
            "{stored}"
        );
        assert!(logins.authenticate("sa", "Str0ng!Passw0rd"));
        assert!(logins.authenticate("SA", "Str0ng!Passw0rd"));
        assert!(!logins.authenticate("sa", "wrong"));
        let again = Logins::open_or_create(dir.path(), Some("Other!Passw0rd")).unwrap();
        assert!(again.authenticate("sa", "Str0ng!Passw0rd"), "a restart keeps the stored password");
    }
}
