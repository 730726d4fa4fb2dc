// Temporaries mixgpt owns: the only things its clean-ups of stale temporaries ever remove.
//
// A folder written under a temporary name beside its final place (prepare --force's new dataset
// and the one it replaces; export's and import's staging folders and the folder they replace) is
// made by `create_owned_folder`, with a marker inside before anything else is written there:
//
//   .mixgpt-temporary   "mixgpt-temporary tool <tool> pid <pid> start <ticks> host <host>"
//
// A file written under a temporary name (core/atomic_file.h) carries its writer in its name:
// "<name>.tmp-<pid>-<start>" (core/process_identity.h: the start time tells a reused pid apart).
//
// The sweeps remove a temporary only when it proves it is ours and its writer has ended: a folder
// whose marker names a process of this host that is gone, a regular file whose name does; and never
// a path that is, or contains, one of the running command's inputs. A folder is released (its
// marker removed) just before it is renamed into its final place, so a finished output never
// looks like a temporary. Whatever has no marker is the user's, whatever its name.
#pragma once

#include <string>
#include <vector>

#include "core/process_identity.h"

namespace mixgpt {

inline constexpr const char* kTemporaryMarkerName = ".mixgpt-temporary";

// The marker's text for a folder of `tool` ("prepare", "export", ...) written by `writer`.
std::string temporary_marker_text(const std::string& tool, const ProcessIdentity& writer);

// Creates the folder `path`, which must not exist, with this process's marker; throws Error.
void create_owned_folder(const std::string& path, const std::string& tool);

// Removes the marker of a folder made by create_owned_folder: it is about to become an output.
void release_owned_folder(const std::string& path);

// "<final_path>.tmp-<pid>-<start>": where this process writes `final_path` before the rename.
std::string owned_file_temporary(const std::string& final_path);

// Takes over the folder `path` when its marker names a process of this host that is gone (a
// killed writer's unfinished work, to be continued): the marker then names this process. Returns
// false, changing nothing, for any other folder.
bool adopt_stale_owned_folder(const std::string& path, const std::string& tool);

// Removes the stale folders beside `final_path` ("<its name>.<anything>") that hold the marker of
// a process of this host that is gone, except those that are or contain one of `inputs`. Returns
// the paths removed.
std::vector<std::string> remove_stale_owned_folders(const std::string& final_path,
                                                    const std::vector<std::string>& inputs);

// Removes the regular files in `directory` named "<name>.tmp-<pid>-<start>" whose process is gone,
// except `inputs`. Returns the paths removed.
std::vector<std::string> remove_stale_owned_files(const std::string& directory,
                                                  const std::vector<std::string>& inputs);

}  // namespace mixgpt
