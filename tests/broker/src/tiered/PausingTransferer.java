import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import org.apache.kafka.server.log.remote.storage.Transferer;

/**
 * LocalTieredStorage's file copy (its transferer.class setting, the hook Kafka gives to
 * simulate copy failures), with one addition: while the file "pause-uploads" exists in the
 * storage folder's parent, a copy stops before its time index, after the segment and its
 * offset index were written, and says so by adding the time index's path as a line of
 * "upload-paused". The broker test stops the broker there: each upload paused (one, or more
 * when another partition's upload started meanwhile) never finished.
 */
public final class PausingTransferer implements Transferer {
  @Override
  public void transfer(File from, File to) throws IOException {
    if (to.getName().endsWith(".timeindex")) {
      pauseWhileAsked(to);
    }
    if (from.exists()) {
      Files.copy(from.toPath(), to.toPath());
    }
  }

  @Override
  public void transfer(ByteBuffer from, File to) throws IOException {
    if (from != null && from.hasRemaining()) {
      try (FileOutputStream out = new FileOutputStream(to, false);
          FileChannel channel = out.getChannel()) {
        channel.write(from);
      }
    }
  }

  private static void pauseWhileAsked(File to) throws IOException {
    // to = <dir>/kafka-tiered-storage/<topic>-<partition>-<topic id>/<file>
    File root = to.getParentFile().getParentFile().getParentFile();
    File pause = new File(root, "pause-uploads");
    if (!pause.exists()) {
      return;
    }
    File paused = new File(root, "upload-paused");
    Files.writeString(
        paused.toPath(),
        to.getPath() + "\n",
        StandardOpenOption.CREATE,
        StandardOpenOption.APPEND);
    while (pause.exists()) {
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted while paused", e);
      }
    }
  }
}
