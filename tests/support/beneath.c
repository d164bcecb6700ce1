/* beneath SRC TGT: mounts a copy of SRC beneath the mount on TGT (open_tree + move_mount with
 * MOVE_MOUNT_BENEATH, Linux 6.5): the new mount lies lower in the stack, with a newer id. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#define OPEN_TREE_CLONE_ 1
#define MOVE_MOUNT_F_EMPTY_PATH_ 0x4
#define MOVE_MOUNT_BENEATH_ 0x200

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: beneath SRC TGT\n");
        return 2;
    }
    int fd = (int)syscall(SYS_open_tree, AT_FDCWD, argv[1], OPEN_TREE_CLONE_ | O_CLOEXEC);
    if (fd < 0) {
        perror("open_tree");
        return 1;
    }
    if (syscall(SYS_move_mount, fd, "", AT_FDCWD, argv[2],
                MOVE_MOUNT_F_EMPTY_PATH_ | MOVE_MOUNT_BENEATH_) != 0) {
        perror("move_mount");
        return 1;
    }
    return 0;
}
