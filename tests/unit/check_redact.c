/* SPDX-License-Identifier: MIT
 *
 * check_redact.c - unit tests of secret redaction (journal/redact.c).
 *
 * Each token shape, each default env and argv pattern, configured patterns, URL
 * passwords, fingerprints on and off, and truncation: every case checks the exact
 * output, so both a secret that slips through and an innocent value that is mangled
 * fail.
 */
#include "redact.h"
#include "unit.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#define M BBX_REDACT_MARK

static char buf[4096];

static const char *text(const char *s)
{
	size_t n = bbx_redact_text(s, buf, sizeof buf);
	ck_assert_uint_eq(n, strlen(buf));
	return buf;
}

static const char *env(const char *s)
{
	size_t n = bbx_redact_env(s, buf, sizeof buf);
	ck_assert_uint_eq(n, strlen(buf));
	return buf;
}

static const char *arg(const char *tool, const char *prev, const char *s)
{
	size_t n = bbx_redact_arg(tool, prev, s, buf, sizeof buf);
	ck_assert_uint_eq(n, strlen(buf));
	return buf;
}

START_TEST(test_token_shapes)
{
	bbx_redact_reset();
	ck_assert_str_eq(text("id AKIAIOSFODNN7EXAMPLE ok"), "id " M " ok");
	ck_assert_str_eq(text("ASIAY34FZKBOKMUTVV7A"), M);
	ck_assert_str_eq(text("AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
			 M " " M);
	ck_assert_str_eq(text("ghp_abcdefghijklmnopqrstuvwxyz0123456789"), M);
	ck_assert_str_eq(text("x=gho_ABCDEFGHIJKLMNOPQRSTUV;"), "x=" M ";");
	ck_assert_str_eq(text("ghu_ABCDEFGHIJKLMNOPQRSTUV"), M);
	ck_assert_str_eq(text("ghs_ABCDEFGHIJKLMNOPQRSTUV"), M);
	ck_assert_str_eq(text("ghr_ABCDEFGHIJKLMNOPQRSTUV"), M);
	ck_assert_str_eq(text("github_pat_11ABCDEFG0123456789_abcdefghijklmnop"), M);
	ck_assert_str_eq(text("key sk-proj-abcdefghijklmnopqrstuvwx end"), "key " M " end");
	ck_assert_str_eq(text("sk-ant-api03-abcdefghijklmnopqrstuvwxyz"), M);
	ck_assert_str_eq(text("xoxb-1234567890-abcdefghij"), M);
	ck_assert_str_eq(text("xoxp-1234567890-abc"), M);
	ck_assert_str_eq(text("t=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVm"),
			 "t=" M);
	ck_assert_str_eq(text("AIzaSyA-abcdefghijklmnopqrstuvwxyz01234"), M);
	ck_assert_str_eq(text("Authorization: Bearer abc.def-ghi_jkl"), "Authorization: Bearer " M);
	ck_assert_str_eq(text("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n"
			      "-----END RSA PRIVATE KEY-----\nafter"),
			 M "\nafter");
	ck_assert_str_eq(text("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk"), M);
}
END_TEST

START_TEST(test_innocent_untouched)
{
	bbx_redact_reset();
	const char *keep[] = {
		"hello world", "/usr/bin/ls", "--verbose", "-pthread", "task-abcdefghijklmnopqrstuvwx",
		"https://example.com/path?q=1", "http://user@host/", "sk-short",
		"ghp_short", "-----BEGIN CERTIFICATE-----", "Bearer", "0123456789abcdef0123456789abcdef01234567",
		"AKIA_not_a_key", "",
	};
	for (size_t i = 0; i < sizeof keep / sizeof *keep; i++) {
		ck_assert_str_eq(text(keep[i]), keep[i]);
		ck_assert_str_eq(arg("ls", "ls", keep[i]), keep[i]);
	}
	ck_assert_str_eq(env("PATH=/usr/bin:/bin"), "PATH=/usr/bin:/bin");
	ck_assert_str_eq(env("HOME=/home/u"), "HOME=/home/u");
	ck_assert_str_eq(env("noequals"), "noequals");
}
END_TEST

START_TEST(test_env_defaults)
{
	bbx_redact_reset();
	ck_assert_str_eq(env("MY_API_TOKEN=abc123"), "MY_API_TOKEN=" M);
	ck_assert_str_eq(env("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI"), "AWS_SECRET_ACCESS_KEY=" M);
	ck_assert_str_eq(env("db_password=x"), "db_password=" M);
	ck_assert_str_eq(env("MYSQL_PASSWD=x"), "MYSQL_PASSWD=" M);
	ck_assert_str_eq(env("SSH_KEY=x"), "SSH_KEY=" M);
	ck_assert_str_eq(env("GOOGLE_APPLICATION_CREDENTIALS=/p"), "GOOGLE_APPLICATION_CREDENTIALS=" M);
	ck_assert_str_eq(env("HTTP_AUTH=u:p"), "HTTP_AUTH=" M);
	ck_assert_str_eq(env("TOKEN="), "TOKEN=" M);
	/* not a secret name, but a secret shape in the value */
	ck_assert_str_eq(env("GIT_URL=https://bob:hunter2@git.example/x"),
			 "GIT_URL=https://bob:" M "@git.example/x");
}
END_TEST

START_TEST(test_argv_defaults)
{
	bbx_redact_reset();
	ck_assert_str_eq(arg("tool", "tool", "--password=hunter2"), "--password=" M);
	ck_assert_str_eq(arg("tool", "tool", "--PASSWORD=hunter2"), "--PASSWORD=" M);
	ck_assert_str_eq(arg("tool", "tool", "--db-password=x"), "--db-password=" M);
	ck_assert_str_eq(arg("tool", "tool", "--token=x"), "--token=" M);
	ck_assert_str_eq(arg("tool", "tool", "--github-token=x"), "--github-token=" M);
	ck_assert_str_eq(arg("tool", "tool", "--api-key=x"), "--api-key=" M);
	ck_assert_str_eq(arg("tool", "tool", "--secret=x"), "--secret=" M);
	ck_assert_str_eq(arg("tool", "--password", "hunter2"), M);
	ck_assert_str_eq(arg("tool", "--token", "abc"), M);
	ck_assert_str_eq(arg("tool", "--verbose", "abc"), "abc");
	ck_assert_str_eq(arg("/usr/bin/mysql", "-u", "-phunter2"), "-p" M);
	ck_assert_str_eq(arg("sshpass", "sshpass", "-phunter2"), "-p" M);
	ck_assert_str_eq(arg("gcc", "gcc", "-pthread"), "-pthread");
	ck_assert_str_eq(arg("mysql", "mysql", "-p"), "-p");
	ck_assert_str_eq(arg("env", "env", "MY_API_TOKEN=abc"), "MY_API_TOKEN=" M);
	ck_assert_str_eq(arg("make", "make", "CFLAGS=-O2"), "CFLAGS=-O2");
	ck_assert_str_eq(arg("git", "clone", "https://alice:s3cr3t@github.com/o/r.git"),
			 "https://alice:" M "@github.com/o/r.git");
	ck_assert_str_eq(arg("curl", "-H", "Authorization: Bearer abcdefghij"),
			 "Authorization: Bearer " M);
}
END_TEST

START_TEST(test_shell_text)
{
	bbx_redact_reset();
	ck_assert_str_eq(text("MY_API_TOKEN=abc env; echo ok"), "MY_API_TOKEN=" M " env; echo ok");
	ck_assert_str_eq(text("export GH_TOKEN='a b c' && x"), "export GH_TOKEN=" M " && x");
	ck_assert_str_eq(text("cli --password=hunter2xyz -v"), "cli --password=" M " -v");
	ck_assert_str_eq(text("cli --password hunter2xyz -v"), "cli --password " M " -v");
	ck_assert_str_eq(text("cli --token \"abc def\" -v"), "cli --token " M " -v");
	ck_assert_str_eq(text("(PASSWORD=x; y)"), "(PASSWORD=" M "; y)");
	ck_assert_str_eq(text("CC=gcc make V=1"), "CC=gcc make V=1");
	ck_assert_str_eq(text("a=b==c --x=1 echo PASSWORD"), "a=b==c --x=1 echo PASSWORD");
}
END_TEST

/* The scanner's character classes, byte by byte (redact.c, cls_tab): after which bytes
 * a shell word starts, at which a value ends, which bytes continue a token's word, and
 * where a URL's authority stops.  Every byte but NUL, each class against the list it
 * must equal, so a table entry lost or added fails here. */
START_TEST(test_byte_classes)
{
	bbx_redact_reset();
	char in[128], want[128];
	for (int b = 1; b < 256; b++) {
		char c = (char)b;
		bool sep = strchr(" \t\n\r;&|(`", c) != NULL;
		bool end = strchr(" \t\n\r;&|()<>`'\"", c) != NULL;
		bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		bool stop = strchr(" \t\n\r/?#", c) != NULL;
		/* a word starts after c: its NAME=VALUE is judged (or c joins "x" into one
		 * identifier, whose name holds PASSWORD all the same) */
		snprintf(in, sizeof in, "x%cPASSWORD=abc", c);
		snprintf(want, sizeof want, sep || alnum || c == '_' ? "x%cPASSWORD=" M : "x%cPASSWORD=abc", c);
		ck_assert_msg(!strcmp(text(in), want), "byte %d after a word: %s", b, buf);
		/* c ends the value */
		snprintf(in, sizeof in, "PASSWORD=abc%cdef", c);
		if (end)
			snprintf(want, sizeof want, "PASSWORD=" M "%cdef", c);
		else
			snprintf(want, sizeof want, "PASSWORD=" M);
		ck_assert_msg(!strcmp(text(in), want), "byte %d in a value: %s", b, buf);
		/* a token's prefix counts only where a word starts: not after a letter or digit */
		snprintf(in, sizeof in, "%csk-abcdefghijklmnopqrstuvwxyz", c);
		if (alnum)
			snprintf(want, sizeof want, "%s", in);
		else
			snprintf(want, sizeof want, "%c" M, c);
		ck_assert_msg(!strcmp(text(in), want), "byte %d before sk-: %s", b, buf);
		/* a URL's authority stops at a blank, '/', '?' or '#' */
		snprintf(in, sizeof in, "https://u:pw%cx@h", c);
		if (stop)
			snprintf(want, sizeof want, "%s", in);
		else
			snprintf(want, sizeof want, "https://u:" M "@h");
		ck_assert_msg(!strcmp(text(in), want), "byte %d in an authority: %s", b, buf);
	}
}
END_TEST

START_TEST(test_url_passwords)
{
	bbx_redact_reset();
	ck_assert_str_eq(text("postgres://u:p@db:5432/x"), "postgres://u:" M "@db:5432/x");
	ck_assert_str_eq(text("see https://u:p@a@h/x and ftp://v:q@h2"),
			 "see https://u:" M "@h/x and ftp://v:" M "@h2");
	ck_assert_str_eq(text("https://u:@h/"), "https://u:@h/");
	ck_assert_str_eq(text("https://h:8080/a@b"), "https://h:8080/a@b");
}
END_TEST

START_TEST(test_configured)
{
	bbx_redact_reset();
	ck_assert_str_eq(env("INTERNAL_PIN=1234"), "INTERNAL_PIN=1234");
	const char *e[] = {"*_PIN"}, *a[] = {"--pin=*", "--passphrase", "-k*"};
	ck_assert_int_eq(bbx_redact_configure(e, 1, a, 3, false), 0);
	ck_assert_str_eq(env("internal_pin=1234"), "internal_pin=" M);
	ck_assert_str_eq(arg("t", "t", "--pin=1234"), "--pin=" M);
	ck_assert_str_eq(arg("t", "--passphrase", "correct horse"), M);
	ck_assert_str_eq(arg("t", "t", "-kabc"), "-k" M);
	ck_assert(bbx_redact_glob("a*b?c", "AxxBzC"));
	ck_assert(!bbx_redact_glob("a*b?c", "AxxBC"));
	bbx_redact_reset();
	ck_assert_str_eq(env("INTERNAL_PIN=1234"), "INTERNAL_PIN=1234");
	/* The built-in globs all start with "--": an argument with fewer dashes is passed
	 * over without a glob run, unless a configured glob starts with fewer (one dash,
	 * none, a wildcard). */
	ck_assert_str_eq(arg("t", "t", "-kabc"), "-kabc");
	ck_assert_str_eq(arg("t", "t", "zork=abc"), "zork=abc");
	const char *a2[] = {"*zork=*", "?pin=*", "--x=*"};
	for (size_t n = 1; n <= 3; n++) {
		ck_assert_int_eq(bbx_redact_configure(NULL, 0, a2 + 3 - n, n, false), 0);
		ck_assert_str_eq(arg("t", "t", "--x=1"), "--x=" M);
		ck_assert_str_eq(arg("t", "t", "--password=1"), "--password=" M);
		if (n >= 2)
			ck_assert_str_eq(arg("t", "t", "Apin=2"), "Apin=" M);
		if (n == 3)
			ck_assert_str_eq(arg("t", "t", "my-zork=3"), "my-zork=" M);
		bbx_redact_reset();
	}
	ck_assert_str_eq(arg("t", "t", "Apin=2"), "Apin=2");
	ck_assert_str_eq(arg("t", "t", "my-zork=3"), "my-zork=3");
	ck_assert_str_eq(arg("t", "t", "--password=1"), "--password=" M);
}
END_TEST

static const char *got_env = "*_PIN";
static const char *got_pattern(int kind, size_t i)
{
	static const char *const a[] = {"--pin=*", "--passphrase", "-k*"};
	return kind ? a[i] : got_env;
}

START_TEST(test_used_in_place)
{
	bbx_redact_reset();
	ck_assert_str_eq(env("INTERNAL_PIN=1234"), "INTERNAL_PIN=1234");
	bbx_redact_use(got_pattern, 1, 3, false);
	ck_assert_str_eq(env("internal_pin=1234"), "internal_pin=" M);
	ck_assert_str_eq(env("PATH=/bin"), "PATH=/bin");
	ck_assert_str_eq(arg("t", "t", "--pin=1234"), "--pin=" M);
	ck_assert_str_eq(arg("t", "--passphrase", "correct horse"), M);
	ck_assert_str_eq(arg("t", "t", "-kabc"), "-k" M);
	/* asked each time: a pattern changed in place is the one used */
	got_env = "*_CODE";
	ck_assert_str_eq(env("INTERNAL_PIN=1234"), "INTERNAL_PIN=1234");
	ck_assert_str_eq(env("door_code=1234"), "door_code=" M);
	got_env = "*_PIN";
	/* configure replaces it (and copies) */
	const char *e[] = {"*_SALT"};
	ck_assert_int_eq(bbx_redact_configure(e, 1, NULL, 0, false), 0);
	ck_assert_str_eq(env("INTERNAL_PIN=1234"), "INTERNAL_PIN=1234");
	ck_assert_str_eq(env("MY_SALT=1234"), "MY_SALT=" M);
	ck_assert_str_eq(arg("t", "t", "--pin=1234"), "--pin=1234");
	bbx_redact_reset();
	ck_assert_str_eq(env("MY_SALT=1234"), "MY_SALT=1234");
}
END_TEST

START_TEST(test_fingerprint)
{
	bbx_redact_reset();
	ck_assert_int_eq(bbx_redact_configure(NULL, 0, NULL, 0, true), 0);
	char a[64], b[64], c[64];
	bbx_redact_env("X_TOKEN=one", a, sizeof a);
	bbx_redact_env("Y_TOKEN=one", b, sizeof b);
	bbx_redact_env("X_TOKEN=two", c, sizeof c);
	ck_assert_uint_eq(strlen(a), strlen("X_TOKEN=***REDACTED:00000000***"));
	ck_assert(strncmp(a, "X_TOKEN=***REDACTED:", 20) == 0);
	ck_assert_str_eq(a + 28, "***");
	ck_assert_str_eq(a + 8, b + 8);  /* same secret, same fingerprint */
	ck_assert_str_ne(a + 8, c + 8);  /* different secret, different one */
	ck_assert(strstr(a, "one") == NULL);
	bbx_redact_reset();
	bbx_redact_env("X_TOKEN=one", a, sizeof a);
	ck_assert_str_eq(a, "X_TOKEN=" M);
}
END_TEST

START_TEST(test_truncation)
{
	bbx_redact_reset();
	char small[10];
	size_t n = bbx_redact_env("MY_TOKEN=hunter2hunter2", small, sizeof small);
	ck_assert_uint_eq(n, strlen("MY_TOKEN=" M));
	ck_assert_str_eq(small, "MY_TOKEN=");
	n = bbx_redact_text("x ghp_abcdefghijklmnopqrstuvwxyz", small, 6);
	ck_assert_uint_eq(n, 2 + strlen(M));
	ck_assert_str_eq(small, "x ***");
	ck_assert_uint_eq(bbx_redact_text("abc", NULL, 0), 3);
	/* lists: elements that do not fit whole are left out, later ones too */
	char *argv[] = {"mysql", "-phunter2", "x", NULL};
	char out[64];
	size_t need = bbx_redact_argv(argv, out, sizeof out);
	ck_assert_uint_eq(need, 6 + 2 + strlen(M) + 1 + 2);
	ck_assert(memcmp(out, "mysql\0-p" M "\0x\0", need) == 0);
	memset(out, 'Z', sizeof out);
	ck_assert_uint_eq(bbx_redact_argv(argv, out, 10), need);
	ck_assert(memcmp(out, "mysql\0", 6) == 0);
	ck_assert(memmem(out, sizeof out, "hunter2", 7) == NULL);
	char *envp[] = {"A=1", "B_SECRET=zz", NULL};
	need = bbx_redact_envp(envp, out, sizeof out);
	ck_assert_uint_eq(need, 4 + 9 + strlen(M) + 1);
	ck_assert(memcmp(out, "A=1\0B_SECRET=" M, need) == 0);
}
END_TEST

/* The run's table of clean environment entries: clean entries enter it and are then
 * copied; an entry with a secret never enters it and is redacted every time; an entry
 * cut short by the room never enters it; the output is the same with or without. */
START_TEST(test_clean_cache)
{
	bbx_redact_reset();
	uint64_t slots[64] = {0};
	char *envp[] = {"PATH=/usr/bin:/bin", "HOME=/root", "GH=ghp_abcdefghijklmnopqrstuvwxyz0123",
			"AWS_SECRET_ACCESS_KEY=abc", "LONG=0123456789abcdefghij", NULL};
	char plain[256], first[256], second[256];
	size_t n0 = bbx_redact_envp(envp, plain, sizeof plain);
	bbx_redact_set_cache(slots, 64, 42);
	size_t n1 = bbx_redact_envp(envp, first, sizeof first);
	int used = 0;
	for (int i = 0; i < 64; i++)
		used += slots[i] != 0;
	ck_assert_int_eq(used, 3); /* PATH, HOME, LONG: the two with secrets stay out */
	size_t n2 = bbx_redact_envp(envp, second, sizeof second);
	ck_assert_uint_eq(n0, n1);
	ck_assert_uint_eq(n1, n2);
	ck_assert(memcmp(plain, first, n0) == 0 && memcmp(first, second, n0) == 0);
	ck_assert(memmem(second, n2, "ghp_", 4) == NULL && memmem(second, n2, "=abc", 4) == NULL);
	/* a cached entry copied into too little room is cut, like a scanned one */
	char small[8];
	ck_assert_uint_eq(bbx_redact_envp(envp, small, sizeof small), n0);
	ck_assert(memcmp(small, "PATH=/u", 7) == 0);
	/* an entry truncated by the room is not entered */
	uint64_t fresh[64] = {0};
	bbx_redact_set_cache(fresh, 64, 7);
	char *one[] = {"LONG=0123456789abcdefghij", NULL};
	bbx_redact_envp(one, small, sizeof small);
	for (int i = 0; i < 64; i++)
		ck_assert_uint_eq(fresh[i], 0);
	/* Four-way, and a hash only ever enters an empty slot: with a single group, the
	 * first four clean entries keep it, and a fifth (bash's changing "_=") is scanned
	 * every time without evicting any; the output is unchanged. */
	uint64_t grp[4] = {0};
	bbx_redact_set_cache(grp, 4, 9);
	char *five[] = {"A=1", "B=2", "C=3", "D=4", "_=/bin/true", NULL};
	char o1[64], o2[64];
	size_t a = bbx_redact_envp(five, o1, sizeof o1);
	uint64_t want[4];
	for (int i = 0; i < 4; i++)
		want[i] = XXH3_64bits_withSeed(five[i], 3, 9) | 1;
	for (int i = 0; i < 4; i++)
		ck_assert_uint_eq(grp[i], want[i]); /* in order: each took the first empty slot */
	ck_assert_uint_eq(bbx_redact_envp(five, o2, sizeof o2), a);
	for (int i = 0; i < 4; i++)
		ck_assert_uint_eq(grp[i], want[i]);
	ck_assert(memcmp(o1, o2, a) == 0 && memcmp(o1, "A=1\0B=2\0C=3\0D=4\0_=/bin/true", a) == 0);
	bbx_redact_set_cache(NULL, 0, 0);
}
END_TEST

/* 100 environment entries VAR<i>=v<i> into envp (NULL-terminated), in names. */
static void hundred_vars(char names[100][32], char *envp[101])
{
	for (int i = 0; i < 100; i++) {
		snprintf(names[i], 32, "VAR%d=v%d", i, i);
		envp[i] = names[i];
	}
	envp[100] = NULL;
}

/* Every group of the table is used: the hash's lowest bit is always set (0 marks an
 * empty slot), and a group taken from the whole hash left half of the table unused
 * (100 entries in 256 slots: ~80 stored, ~20 scanned again at every exec). */
START_TEST(test_clean_cache_spread)
{
	bbx_redact_reset();
	static uint64_t slots[256];
	memset(slots, 0, sizeof slots);
	bbx_redact_set_cache(slots, 256, 0x5eed);
	char names[100][32];
	char *envp[101];
	hundred_vars(names, envp);
	static char out[4096];
	bbx_redact_envp(envp, out, sizeof out);
	int used = 0, low = 0;
	for (int i = 0; i < 256; i++) {
		used += slots[i] != 0;
		low += slots[i] != 0 && i % 4 < 2;
	}
	ck_assert_int_ge(used, 95);
	ck_assert_int_gt(low, 0);
	bbx_redact_set_cache(NULL, 0, 0);
}
END_TEST

/* A table whose groups are no power of two uses the largest power of two of them, from
 * its start (a group is picked by a mask): nothing past it is read or written, and the
 * output is the scanner's. */
START_TEST(test_clean_cache_odd_size)
{
	bbx_redact_reset();
	static uint64_t slots[24 + 8];
	for (int i = 0; i < 32; i++)
		slots[i] = i < 24 ? 0 : 0x5a5a5a5a5a5a5a5aull;
	bbx_redact_set_cache(slots, 24, 0x0dd);
	char names[100][32];
	char *envp[101];
	hundred_vars(names, envp);
	static char out[4096], plain[4096];
	size_t a = bbx_redact_envp(envp, out, sizeof out);
	size_t b = bbx_redact_envp(envp, out, sizeof out);
	int used = 0;
	for (int i = 0; i < 16; i++)
		used += slots[i] != 0;
	ck_assert_int_eq(used, 16); /* 4 groups of 4, all taken by 100 entries */
	for (int i = 16; i < 24; i++)
		ck_assert_uint_eq(slots[i], 0);
	for (int i = 24; i < 32; i++)
		ck_assert_uint_eq(slots[i], 0x5a5a5a5a5a5a5a5aull);
	bbx_redact_set_cache(NULL, 0, 0);
	size_t c = bbx_redact_envp(envp, plain, sizeof plain);
	ck_assert_uint_eq(a, c);
	ck_assert_uint_eq(b, c);
	ck_assert(memcmp(out, plain, c) == 0);
}
END_TEST

/* argv elements share the clean cache (their own seed, the last two slots of a group).
 * What it may answer for an element depends on its neighbours and its tool, so each
 * entered element is checked again in the contexts that change it: after a secret flag,
 * as a flag itself, and as "-pX" under a tool that takes a password that way. */
static size_t argv_out(char **argv, char *out, size_t cap)
{
	memset(out, 0, cap);
	return bbx_redact_argv(argv, out, cap);
}

START_TEST(test_clean_cache_argv)
{
	bbx_redact_reset();
	static uint64_t slots[256];
	memset(slots, 0, sizeof slots);
	bbx_redact_set_cache(slots, 256, 0xa4);
	char o1[512], o2[512], o3[512];
	/* Entered, and copied the second time: same bytes. */
	char *plain[] = {"cc", "-O2", "-c", "deflate.c", "-o", "deflate.o", NULL};
	size_t a = argv_out(plain, o1, sizeof o1);
	int used = 0, high = 1;
	for (int i = 0; i < 256; i++) {
		used += slots[i] != 0;
		high &= slots[i] == 0 || i % 4 >= 2;
	}
	ck_assert_int_ge(used, 5); /* six elements; at most two ways of one group collide */
	ck_assert(high);	   /* the environment's first two ways left alone */
	ck_assert_uint_eq(argv_out(plain, o2, sizeof o2), a);
	ck_assert(memcmp(o1, o2, a) == 0 && memcmp(o1, "cc\0-O2\0-c\0deflate.c", 20) == 0);
	/* A clean element, known to the cache, after a secret flag: still redacted. */
	char *warm[] = {"tool", "s3cretvalue", NULL};
	argv_out(warm, o1, sizeof o1);
	argv_out(warm, o1, sizeof o1);
	ck_assert(memmem(o1, sizeof o1, "s3cretvalue", 11) != NULL);
	char *after[] = {"tool", "--password", "s3cretvalue", NULL};
	size_t n = argv_out(after, o2, sizeof o2);
	ck_assert(memmem(o2, n, "s3cretvalue", 11) == NULL);
	/* A secret flag is never entered, so what follows it is redacted every time. */
	n = argv_out(after, o3, sizeof o3);
	ck_assert(memmem(o3, n, "s3cretvalue", 11) == NULL);
	char *flag2[] = {"tool", "--password", "--password", "again", NULL};
	n = argv_out(flag2, o3, sizeof o3);
	ck_assert(memmem(o3, n, "again", 5) == NULL);
	/* "-pX" is clean under one tool and a password under another: never entered. */
	char *p1[] = {"sh", "-pxyzzy", NULL};
	argv_out(p1, o1, sizeof o1);
	argv_out(p1, o1, sizeof o1);
	ck_assert(memmem(o1, sizeof o1, "-pxyzzy", 7) != NULL);
	char *p2[] = {"/usr/bin/mysql", "-pxyzzy", NULL};
	n = argv_out(p2, o2, sizeof o2);
	ck_assert(memmem(o2, n, "xyzzy", 5) == NULL);
	/* The same through bbx_redact_block (a PROC's saved command line). */
	static const char blk[] = "tool\0--password\0s3cretvalue";
	n = bbx_redact_block(blk, sizeof blk, false, o3, sizeof o3);
	ck_assert(memmem(o3, n, "s3cretvalue", 11) == NULL);
	static const char blk2[] = "mysql\0-pxyzzy";
	n = bbx_redact_block(blk2, sizeof blk2, false, o3, sizeof o3);
	ck_assert(memmem(o3, n, "xyzzy", 5) == NULL);
	/* An environment entry and an argv element of the same bytes are two keys: the
	 * element cached clean does not make the entry clean. */
	char *e1[] = {"tool", "MYCO_KEY=abc", NULL};
	argv_out(e1, o1, sizeof o1); /* as an argument: a secret NAME, redacted, not entered */
	char *envp[] = {"PLAIN=abc", NULL};
	char *args[] = {"tool", "PLAIN=abc", NULL};
	argv_out(args, o1, sizeof o1);
	uint64_t key = XXH3_64bits_withSeed("PLAIN=abc", 9, 0xa4) | 1;
	int as_env = 0;
	for (int i = 0; i < 256; i++)
		as_env += slots[i] == key;
	ck_assert_int_eq(as_env, 0);
	bbx_redact_envp(envp, o2, sizeof o2);
	as_env = 0;
	for (int i = 0; i < 256; i++)
		as_env += slots[i] == key;
	ck_assert_int_eq(as_env, 1);
	bbx_redact_set_cache(NULL, 0, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("redact");
	TCase *tc = tcase_create("redact");
	tcase_add_test(tc, test_token_shapes);
	tcase_add_test(tc, test_innocent_untouched);
	tcase_add_test(tc, test_env_defaults);
	tcase_add_test(tc, test_argv_defaults);
	tcase_add_test(tc, test_clean_cache_argv);
	tcase_add_test(tc, test_clean_cache_odd_size);
	tcase_add_test(tc, test_shell_text);
	tcase_add_test(tc, test_byte_classes);
	tcase_add_test(tc, test_url_passwords);
	tcase_add_test(tc, test_configured);
	tcase_add_test(tc, test_used_in_place);
	tcase_add_test(tc, test_fingerprint);
	tcase_add_test(tc, test_truncation);
	tcase_add_test(tc, test_clean_cache);
	tcase_add_test(tc, test_clean_cache_spread);
	suite_add_tcase(s, tc);
	return unit_main(s);
}
