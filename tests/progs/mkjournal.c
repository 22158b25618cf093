/* SPDX-License-Identifier: MIT
 *
 * mkjournal DIR - writes a small journal of known records into DIR (created), for
 * tests of the tools that read journals (t-log.sh).  It covers the record types that
 * the shim may not write yet (DENY, PROC, EXIT, NET, RESOLVE) and a path that is not
 * UTF-8, with fixed times, pids and seqs so a test can check every field.
 */
#include "journal/record.h"
#include "journal/writer.h"

#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static struct bbx_writer w;
static uint8_t buf[65536];
static uint64_t seq;

static void put(struct bbx_enc *e, int32_t pid, int32_t ppid)
{
	struct bbx_rec_hdr h = {.seq = ++seq, .realtime_ns = 1700000000000000000ull + seq * 1000000ull,
				.mono_ns = 5000 + seq, .pid = pid, .ppid = ppid, .uid = 1000};
	long n = bbx_enc_finish(e, &h);
	if (n < 0)
		errx(1, "encode: %s", strerror((int)-n));
	int rc = bbx_writer_append(&w, buf, (size_t)n);
	if (rc)
		errx(1, "append: %s", strerror(-rc));
}

static struct bbx_enc *begin(int type, const char *op)
{
	static struct bbx_enc e;
	bbx_enc_begin(&e, buf, sizeof buf, type);
	if (op)
		bbx_enc_str(&e, BBX_T_OP, op);
	return &e;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: mkjournal DIR\n");
		return 2;
	}
	if (mkdir(argv[1], 0700) && errno != EEXIST)
		err(1, "%s", argv[1]);
	int rc = bbx_writer_open(&w, argv[1]);
	if (rc)
		errx(1, "%s: %s", argv[1], strerror(-rc));
	struct bbx_enc *e;
	static const char sh_argv[] = "sh\0-c\0rm -rf /w/x; curl x\0";
	static const char env[] = "HOME=/home/u\0LANG=C\0";
	static const char rm_argv[] = "rm\0-rf\0/w/x\0";
	static const char curl_argv[] = "curl\0http://example.org/\0";

	e = begin(BBX_REC_PROC, "init"); /* 1 */
	bbx_enc_str(e, BBX_T_EXE, "/bin/sh");
	bbx_enc_bytes(e, BBX_T_ARGV, sh_argv, sizeof sh_argv - 1);
	bbx_enc_str(e, BBX_T_CWD, "/w");
	bbx_enc_bytes(e, BBX_T_ENV, env, sizeof env - 1);
	put(e, 100, 1);

	e = begin(BBX_REC_EXEC, "execve"); /* 2 */
	bbx_enc_str(e, BBX_T_EXE, "/usr/bin/rm");
	bbx_enc_str(e, BBX_T_CWD, "/w");
	bbx_enc_bytes(e, BBX_T_ARGV, rm_argv, sizeof rm_argv - 1);
	bbx_enc_u32(e, BBX_T_DECISION, BBX_DEC_LOG);
	bbx_enc_u32(e, BBX_T_CLASS, BBX_CLASS_DESTRUCTIVE);
	bbx_enc_str(e, BBX_T_RULE, "policy.ini:12 [exec] destructive = rm -rf");
	put(e, 101, 100);

	e = begin(BBX_REC_DENY, "unlinkat"); /* 3: a path with 0xff, a newline, a quote */
	bbx_enc_str(e, BBX_T_PATH, "/w/x/f\xff\n\"q\xc3\xa9");
	bbx_enc_str(e, BBX_T_RULE, "policy.ini:3 [write] deny = /w/x/**");
	bbx_enc_str(e, BBX_T_REASON, "outside write roots");
	bbx_enc_u32(e, BBX_T_DECISION, BBX_DEC_DENY);
	bbx_enc_u32(e, BBX_T_CLASS, BBX_CLASS_NONE);
	bbx_enc_u32(e, BBX_T_ACCESS, BBX_ACC_WRITE);
	bbx_enc_u32(e, BBX_T_ERR, EACCES);
	put(e, 101, 100);

	e = begin(BBX_REC_CREATE, "openat"); /* 4, its RESULT 5 */
	bbx_enc_str(e, BBX_T_PATH, "/w/new");
	bbx_enc_u32(e, BBX_T_KIND, BBX_KIND_FILE);
	bbx_enc_u32(e, BBX_T_FLAGS, 0644);
	put(e, 101, 100);
	e = begin(BBX_REC_RESULT, "openat");
	bbx_enc_u64(e, BBX_T_REF, 4);
	bbx_enc_i64(e, BBX_T_RET, 3);
	bbx_enc_u32(e, BBX_T_ERR, 0);
	put(e, 101, 100);

	e = begin(BBX_REC_RESOLVE, "getaddrinfo"); /* 6 */
	bbx_enc_str(e, BBX_T_HOST, "localhost");
	bbx_enc_str(e, BBX_T_ADDR, "127.0.0.1");
	put(e, 100, 1);

	e = begin(BBX_REC_NET, "connect"); /* 7 */
	bbx_enc_str(e, BBX_T_ADDR, "127.0.0.1:8080");
	bbx_enc_str(e, BBX_T_HOST, "localhost");
	bbx_enc_u32(e, BBX_T_DECISION, BBX_DEC_ALLOW);
	bbx_enc_str(e, BBX_T_RULE, "policy.ini:20 [net] allow = localhost:8080");
	put(e, 100, 1);

	e = begin(BBX_REC_DENY, "connect"); /* 8 */
	bbx_enc_str(e, BBX_T_ADDR, "[::1]:443");
	bbx_enc_str(e, BBX_T_RULE, "policy.ini:21 [net] default = deny");
	bbx_enc_str(e, BBX_T_REASON, "no allow rule");
	bbx_enc_u32(e, BBX_T_DECISION, BBX_DEC_DENY);
	bbx_enc_u32(e, BBX_T_ACCESS, BBX_ACC_CONNECT);
	bbx_enc_u32(e, BBX_T_ERR, ECONNREFUSED);
	put(e, 100, 1);

	e = begin(BBX_REC_DENY, "execve"); /* 9: audit mode let it through */
	bbx_enc_str(e, BBX_T_PATH, "/usr/bin/curl");
	bbx_enc_bytes(e, BBX_T_ARGV, curl_argv, sizeof curl_argv - 1);
	bbx_enc_str(e, BBX_T_RULE, "policy.ini:30 [exec] dangerous = curl");
	bbx_enc_u32(e, BBX_T_DECISION, BBX_DEC_AUDIT);
	bbx_enc_u32(e, BBX_T_CLASS, BBX_CLASS_DANGEROUS);
	bbx_enc_u32(e, BBX_T_ACCESS, BBX_ACC_EXEC);
	put(e, 100, 1);

	e = begin(BBX_REC_PRESERVE, "unlink"); /* 10, failed: RESULT 11 */
	bbx_enc_str(e, BBX_T_PATH, "/w/gone");
	bbx_enc_u32(e, BBX_T_KIND, BBX_KIND_FILE);
	bbx_enc_u32(e, BBX_T_HOW, BBX_HOW_LINK);
	bbx_enc_str(e, BBX_T_OBJECT, "0a/10");
	struct bbx_stat st = {.mode = S_IFREG | 0640, .uid = 1000, .gid = 1000, .size = 1234};
	bbx_enc_stat(e, &st);
	put(e, 101, 100);
	e = begin(BBX_REC_RESULT, "unlink");
	bbx_enc_u64(e, BBX_T_REF, 10);
	bbx_enc_i64(e, BBX_T_RET, -1);
	bbx_enc_u32(e, BBX_T_ERR, ENOENT);
	put(e, 101, 100);

	e = begin(BBX_REC_EXIT, "exit"); /* 12: rm killed by SIGKILL, reaped by 100 */
	bbx_enc_u64(e, BBX_T_PID, 101);
	bbx_enc_u32(e, BBX_T_STATUS, 9);
	put(e, 100, 1);
	e = begin(BBX_REC_EXIT, "exit"); /* 13: sh exited 3 */
	bbx_enc_u64(e, BBX_T_PID, 100);
	bbx_enc_u32(e, BBX_T_STATUS, 3 << 8);
	put(e, 1, 0);
	bbx_writer_close(&w);
	return 0;
}
