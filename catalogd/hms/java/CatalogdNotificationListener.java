package catalogd.hms;

import java.util.Collections;
import java.util.Iterator;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.metastore.HiveMetaStore.HMSHandler;
import org.apache.hadoop.hive.metastore.MetaStoreEventListener;
import org.apache.hadoop.hive.metastore.ObjectStore;
import org.apache.hadoop.hive.metastore.api.Database;
import org.apache.hadoop.hive.metastore.api.Function;
import org.apache.hadoop.hive.metastore.api.MetaException;
import org.apache.hadoop.hive.metastore.api.NoSuchObjectException;
import org.apache.hadoop.hive.metastore.api.NotificationEvent;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.hadoop.hive.metastore.events.AddPartitionEvent;
import org.apache.hadoop.hive.metastore.events.AlterPartitionEvent;
import org.apache.hadoop.hive.metastore.events.AlterTableEvent;
import org.apache.hadoop.hive.metastore.events.CreateDatabaseEvent;
import org.apache.hadoop.hive.metastore.events.CreateFunctionEvent;
import org.apache.hadoop.hive.metastore.events.CreateTableEvent;
import org.apache.hadoop.hive.metastore.events.DropDatabaseEvent;
import org.apache.hadoop.hive.metastore.events.DropFunctionEvent;
import org.apache.hadoop.hive.metastore.events.DropPartitionEvent;
import org.apache.hadoop.hive.metastore.events.DropTableEvent;
import org.apache.hadoop.hive.metastore.events.InsertEvent;
import org.apache.hadoop.hive.metastore.events.ListenerEvent;
import org.apache.hadoop.hive.metastore.messaging.MessageFactory;
import org.apache.hadoop.hive.metastore.messaging.PartitionFiles;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes Hive Metastore 2.3 changes to its notification log, so that
 * get_current_notificationEventId and get_next_notification report them (catalogd reads
 * them to stay fresh). The source is catalogd/hms/java/CatalogdNotificationListener.java;
 * deploy/hms holds a generated copy.
 *
 * Configure both classes:
 *   hive.metastore.transactional.event.listeners=catalogd.hms.CatalogdNotificationListener
 *   hive.metastore.rawstore.impl=catalogd.hms.CatalogdNotificationListener$Store
 * The listener is transactional, so each event commits or rolls back with its change.
 * The Store makes event ids unique and committed in id order, logs ALTER DATABASE (HMS 2.3
 * calls no listener for it) and drops events older than
 * hive.metastore.event.db.listener.timetolive (default 1 day).
 *
 * catalogd's embedded metastore builds and configures it (notification_events). By hand,
 * with JARS=<site-packages>/pyspark/jars, put the resulting jar on the HMS classpath:
 *   javac --release 8 -cp "$JARS/*" -d classes CatalogdNotificationListener.java
 *   jar cf catalogd-hms-listener.jar -C classes .
 */
public class CatalogdNotificationListener extends MetaStoreEventListener {
  private static final Logger LOG = LoggerFactory.getLogger(CatalogdNotificationListener.class);
  private static final MessageFactory MESSAGES = MessageFactory.getInstance();

  public CatalogdNotificationListener(Configuration conf) {
    super(conf);
  }

  @Override
  public void onCreateDatabase(CreateDatabaseEvent e) throws MetaException {
    Database db = e.getDatabase();
    log(e, MessageFactory.CREATE_DATABASE_EVENT, db.getName(), null,
        MESSAGES.buildCreateDatabaseMessage(db));
  }

  @Override
  public void onDropDatabase(DropDatabaseEvent e) throws MetaException {
    Database db = e.getDatabase();
    log(e, MessageFactory.DROP_DATABASE_EVENT, db.getName(), null,
        MESSAGES.buildDropDatabaseMessage(db));
  }

  @Override
  public void onCreateTable(CreateTableEvent e) throws MetaException {
    Table t = e.getTable();
    log(e, MessageFactory.CREATE_TABLE_EVENT, t.getDbName(), t.getTableName(),
        MESSAGES.buildCreateTableMessage(t, Collections.<String>emptyIterator()));
  }

  @Override
  public void onDropTable(DropTableEvent e) throws MetaException {
    Table t = e.getTable();
    log(e, MessageFactory.DROP_TABLE_EVENT, t.getDbName(), t.getTableName(),
        MESSAGES.buildDropTableMessage(t));
  }

  @Override
  public void onAlterTable(AlterTableEvent e) throws MetaException {
    // Named after the new table: a rename is then seen under the name that now exists.
    Table after = e.getNewTable();
    log(e, MessageFactory.ALTER_TABLE_EVENT, after.getDbName(), after.getTableName(),
        MESSAGES.buildAlterTableMessage(e.getOldTable(), after));
  }

  @Override
  public void onAddPartition(AddPartitionEvent e) throws MetaException {
    Table t = e.getTable();
    Iterator<PartitionFiles> noFiles = Collections.emptyIterator();
    log(e, MessageFactory.ADD_PARTITION_EVENT, t.getDbName(), t.getTableName(),
        MESSAGES.buildAddPartitionMessage(t, e.getPartitionIterator(), noFiles));
  }

  @Override
  public void onDropPartition(DropPartitionEvent e) throws MetaException {
    Table t = e.getTable();
    log(e, MessageFactory.DROP_PARTITION_EVENT, t.getDbName(), t.getTableName(),
        MESSAGES.buildDropPartitionMessage(t, e.getPartitionIterator()));
  }

  @Override
  public void onAlterPartition(AlterPartitionEvent e) throws MetaException {
    Table t = e.getTable();
    log(e, MessageFactory.ALTER_PARTITION_EVENT, t.getDbName(), t.getTableName(),
        MESSAGES.buildAlterPartitionMessage(t, e.getOldPartition(), e.getNewPartition()));
  }

  @Override
  public void onInsert(InsertEvent e) throws MetaException {
    log(e, MessageFactory.INSERT_EVENT, e.getDb(), e.getTable(),
        MESSAGES.buildInsertMessage(e.getDb(), e.getTable(), e.getPartitionKeyValues(),
            e.getFiles().iterator()));
  }

  @Override
  public void onCreateFunction(CreateFunctionEvent e) throws MetaException {
    Function f = e.getFunction();
    log(e, MessageFactory.CREATE_FUNCTION_EVENT, f.getDbName(), null,
        MESSAGES.buildCreateFunctionMessage(f));
  }

  @Override
  public void onDropFunction(DropFunctionEvent e) throws MetaException {
    Function f = e.getFunction();
    log(e, MessageFactory.DROP_FUNCTION_EVENT, f.getDbName(), null,
        MESSAGES.buildDropFunctionMessage(f));
  }

  private void log(ListenerEvent e, String type, String db, String table, Object message)
      throws MetaException {
    if (!e.getStatus()) {
      return; // the change failed: there is nothing to report
    }
    // The thread's own RawStore: inside a transactional listener its transaction is still
    // open, so the event commits (or rolls back) together with the change.
    HMSHandler.getMSForConf(getConf()).addNotificationEvent(event(type, db, table, message));
  }

  static NotificationEvent event(String type, String db, String table, Object message) {
    int now = (int) (System.currentTimeMillis() / 1000L);
    NotificationEvent event = new NotificationEvent(0L, now, type, message.toString());
    event.setDbName(db);
    event.setTableName(table);
    event.setMessageFormat(MESSAGES.getMessageFormat());
    return event;
  }

  /** The default RawStore with an orderly notification log. */
  public static class Store extends ObjectStore {
    // HMS 2.3 takes an event id by reading and rewriting one row, unlocked, in the caller's
    // transaction: concurrent changes get the same id, or commit a smaller id after a
    // larger one. Holding this lock from taking an id until the transaction ends makes
    // ids unique and committed in order (within this metastore process).
    private static final ReentrantLock EVENT_IDS = new ReentrantLock();
    private static final long LOCK_WAIT_S = 30;
    private static final AtomicLong NEXT_CLEAN_MS = new AtomicLong();

    @Override
    public void addNotificationEvent(NotificationEvent event) {
      if (!EVENT_IDS.isHeldByCurrentThread()) {
        try {
          if (!EVENT_IDS.tryLock(LOCK_WAIT_S, TimeUnit.SECONDS)) {
            // Better a repeated id (readers tolerate it) than a stalled metastore.
            LOG.warn("event id lock not free after {} s; logging unordered", LOCK_WAIT_S);
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      super.addNotificationEvent(event);
    }

    @Override
    public boolean commitTransaction() {
      boolean logged = EVENT_IDS.isHeldByCurrentThread();
      boolean committed;
      try {
        committed = super.commitTransaction();
      } finally {
        releaseIfDone();
      }
      if (logged && committed && !isActiveTransaction()) {
        cleanIfDue(); // in a transaction of its own: its failure cannot undo the change
      }
      return committed;
    }

    @Override
    public void rollbackTransaction() {
      try {
        super.rollbackTransaction();
      } finally {
        releaseIfDone();
      }
    }

    @Override
    public boolean alterDatabase(String name, Database db)
        throws MetaException, NoSuchObjectException {
      boolean committed = false;
      openTransaction();
      try {
        boolean changed = super.alterDatabase(name, db);
        // 2.3 has no alter-database message; the create message names the database alike.
        addNotificationEvent(event("ALTER_DATABASE", name, null,
            MESSAGES.buildCreateDatabaseMessage(db)));
        committed = commitTransaction();
        return changed;
      } finally {
        if (!committed) {
          rollbackTransaction();
        }
      }
    }

    private void releaseIfDone() {
      if (!isActiveTransaction()) {
        while (EVENT_IDS.isHeldByCurrentThread()) {
          EVENT_IDS.unlock();
        }
      }
    }

    private void cleanIfDue() {
      long ttlS = getConf().getTimeDuration(
          "hive.metastore.event.db.listener.timetolive", 86400L, TimeUnit.SECONDS);
      long now = System.currentTimeMillis();
      long due = NEXT_CLEAN_MS.get();
      // At most once per ten minutes (or per time-to-live, when shorter).
      if (now >= due && NEXT_CLEAN_MS.compareAndSet(due, now + Math.min(ttlS, 600L) * 1000L)) {
        try {
          cleanNotificationEvents((int) ttlS);
        } catch (RuntimeException e) {
          LOG.warn("removing expired notification events failed", e);
        }
      }
    }
  }
}
