/* SPDX-License-Identifier: MIT
 *
 * bbx-undo - restore every path a run touched to its state before the run.
 */
#include "common.h"
#include "journal/undo.h"

#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bbx-undo [--dry-run] [--verbose] [--quiet] [JOURNAL]\n"
		"Replay a run's journal backward (default: the latest run) and restore every\n"
		"path it touched. The undo is journaled in JOURNAL/undo: bbx-undo JOURNAL/undo\n"
		"reverts it. Paths changed by someone else after the run are conflicts: the\n"
		"later version is kept as PATH.bbx-conflict and the exit status is 3. Paths the\n"
		"run changed without keeping a copy ([journal] over_max_preserve = allow) are\n"
		"listed as lost and stay as the run left them; the exit status is then 4.\n"
		"  -n, --dry-run  print what would be done, change nothing\n"
		"  -v, --verbose  print every path restored or removed\n"
		"  -q, --quiet    print only conflicts and errors\n"
		"  -h, --help     this text\n"
		"      --version  the version and journal format\n"
		"Exit status: 0 restored, 1 failure, 2 usage error, 3 restored with conflicts,\n"
		"4 restored except the paths listed as lost (not restorable).\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {{"dry-run", no_argument, 0, 'n'},
					   {"verbose", no_argument, 0, 'v'},
					   {"quiet", no_argument, 0, 'q'},
					   {"help", no_argument, 0, 'h'},
					   {"version", no_argument, 0, 256},
					   {0, 0, 0, 0}};
	struct bbx_undo_opts o = {.out = stdout};
	int quiet = 0, ch;
	while ((ch = getopt_long(argc, argv, "nvqh", lo, NULL)) != -1) {
		switch (ch) {
		case 'n': o.dry_run = 1; break;
		case 'v': o.verbose = 1; break;
		case 'q': quiet = 1; break;
		case 'h': usage(stdout); return 0;
		case 256: bbx_tool_version("bbx-undo"); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (argc - optind > 1) {
		usage(stderr);
		return 2;
	}
	if (!quiet && isatty(2))
		o.progress = stderr;
	char dir[PATH_MAX];
	bbx_tool_journal(optind < argc ? argv[optind] : NULL, dir, sizeof dir);
	struct bbx_undo_stats s;
	int rc = bbx_undo_run(dir, &o, &s);
	if (rc == -EPROTO)
		errx(1, "%s: its journal format (meta) is not one this bbx-undo knows (bbx-journal 1 "
			"or %s): use the bbx-undo of the bbx that wrote it", dir, BBX_JOURNAL_FORMAT);
	if (rc)
		errx(1, "%s: %s", dir, strerror(-rc));
	if (s.already_done) {
		if (!quiet)
			printf("bbx-undo: %s was already undone; nothing to do (to revert that undo: "
			       "bbx-undo %s/undo)\n", dir, dir);
		return 0;
	}
	if (s.torn)
		fprintf(stderr, "bbx-undo: the journal ends in a torn record (the run was killed "
				"mid-write); everything before it was replayed\n");
	if (!s.sealed && !o.dry_run && !quiet)
		fprintf(stderr, "bbx-undo: the run was not sealed (killed, or started without "
				"bbx-run): changes made after it cannot be told apart\n");
	if (!quiet || s.conflicts || s.errors || s.lost) {
		printf("bbx-undo: %s%zu records, %zu restored, %zu removed, %zu conflicts, %zu "
		       "errors",
		       o.dry_run ? "(dry run) " : "", s.records, s.restored, s.removed, s.conflicts,
		       s.errors);
		if (s.lost)
			printf(", %zu lost (not restorable)", s.lost);
		printf("%s%s\n", s.owner_skipped ? ", owners not restorable: " : "",
		       s.owner_skipped ? "some (not root)" : "");
	}
	if (!o.dry_run && !quiet)
		printf("bbx-undo: this undo is journaled in %s (bbx-undo %s reverts it)\n", s.undo_dir,
		       s.undo_dir);
	if (s.orphans && !quiet)
		printf("bbx-undo: %zu link(s) in %s/objects that no record names %s (kept by a "
		       "process killed before it journaled them)\n",
		       s.orphans, dir, o.dry_run ? "would be removed" : "removed");
	if (s.unrestorable)
		printf("bbx-undo: %zu conflicting path(s) left at their later version (see above)\n",
		       s.unrestorable);
	if (s.lost)
		printf("bbx-undo: %zu path(s) not restorable: changed by the run without a kept "
		       "copy, left as the run left them (see lost: above)\n", s.lost);
	if (s.errors)
		return 1;
	return s.lost ? 4 : s.conflicts ? 3 : 0;
}
