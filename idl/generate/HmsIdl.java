// Dumps the Thrift definitions compiled into a Hive Metastore release, by reflection.
//
// Usage: java -cp "<the release's jars>" HmsIdl.java JAR...
//
// Every class of org.apache.hadoop.hive.metastore.api and com.facebook.fb303 found in
// the given JARs is inspected through the metadata Thrift's Java generator puts in
// every class (metaDataMap, _Fields, TEnum); the services are read from the methods
// of their Iface and their X_args / X_result classes. Output is one record a line,
// tab-separated, read by generate.py (which merges releases and writes the IDL):
//
//   const   <module> <name> <type> <value>
//   enum    <module> <name> <constant> <value>
//   struct  <module> <name> <struct|exception|union>
//   field   <module> <owner> <id> <name> <type> <required|optional|default> [<default>]
//   service <module> <name> <parent module.name or ->
//   method  <module> <service> <name> <oneway|call>
//   arg     <module> <service>.<method> <id> <name> <type> <requiredness> [<default>]
//   result  <module> <service>.<method> <id> <name> <type>
//
// Types are IDL spellings: bool, byte, i16, i32, i64, double, string, binary,
// list<T>, set<T>, map<K,V>, and <module>.<Name> for enums and structs.
// Default values are IDL constants (literals, or <module>.<Enum>.<CONSTANT>).

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import org.apache.thrift.TBase;
import org.apache.thrift.TEnum;
import org.apache.thrift.TException;
import org.apache.thrift.TFieldIdEnum;
import org.apache.thrift.TUnion;
import org.apache.thrift.meta_data.EnumMetaData;
import org.apache.thrift.meta_data.FieldMetaData;
import org.apache.thrift.meta_data.FieldValueMetaData;
import org.apache.thrift.meta_data.ListMetaData;
import org.apache.thrift.meta_data.MapMetaData;
import org.apache.thrift.meta_data.SetMetaData;
import org.apache.thrift.meta_data.StructMetaData;
import org.apache.thrift.protocol.TType;

public class HmsIdl {
  static final String[][] PACKAGES = {
    {"org.apache.hadoop.hive.metastore.api", "hive_metastore"},
    {"com.facebook.fb303", "fb303"},
  };

  static String module(Class<?> c) {
    for (String[] p : PACKAGES) if (c.getPackage().getName().equals(p[0])) return p[1];
    throw new IllegalStateException("type outside the known packages: " + c.getName());
  }

  static String ref(Class<?> c) {
    return module(c) + "." + c.getSimpleName();
  }

  static String type(FieldValueMetaData m) {
    return type(m, null);
  }

  /** The IDL type of ``m``; ``declared`` is the Java type of the field, if ``m`` is a field's. */
  static String type(FieldValueMetaData m, Class<?> declared) {
    if (m instanceof StructMetaData) return ref(((StructMetaData) m).structClass);
    if (m instanceof EnumMetaData) return ref(((EnumMetaData) m).enumClass);
    if (m instanceof ListMetaData) return "list<" + type(((ListMetaData) m).elemMetaData) + ">";
    if (m instanceof SetMetaData) return "set<" + type(((SetMetaData) m).elemMetaData) + ">";
    if (m instanceof MapMetaData) {
      MapMetaData mm = (MapMetaData) m;
      return "map<" + type(mm.keyMetaData) + "," + type(mm.valueMetaData) + ">";
    }
    if (m.type == TType.STRUCT || m.type == TType.ENUM) {
      // A type declared later in the IDL than its use: Thrift's generator names it
      // (or, in results, not even that); the Java field's type says which it is.
      if (declared != null) return ref(declared);
      if (m.getTypedefName() == null) throw new IllegalStateException("unnamed struct type");
      return "hive_metastore." + m.getTypedefName();
    }
    if (m.isTypedef()) throw new IllegalStateException("typedef " + m.getTypedefName());
    switch (m.type) {
      case TType.BOOL: return "bool";
      case TType.BYTE: return "byte";
      case TType.I16: return "i16";
      case TType.I32: return "i32";
      case TType.I64: return "i64";
      case TType.DOUBLE: return "double";
      case TType.STRING: return m.isBinary() ? "binary" : "string";
      default: throw new IllegalStateException("unknown TType " + m.type);
    }
  }

  static Class<?> declared(Class<?> owner, FieldMetaData f) {
    byte t = f.valueMetaData.type;
    if (t != TType.STRUCT && t != TType.ENUM) return null;
    try {
      return owner.getField(f.fieldName).getType();
    } catch (NoSuchFieldException e) {
      try {  // some generated classes keep fields private
        return owner.getDeclaredField(f.fieldName).getType();
      } catch (NoSuchFieldException e2) {
        return null;
      }
    }
  }

  static String requiredness(byte r) {
    return r == 1 ? "required" : r == 2 ? "optional" : "default";
  }

  static String quote(String s) {
    return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }

  /** A non-zero initial value as an IDL constant; null when there is none (0, false, null). */
  static String literal(Object v) {
    if (v == null) return null;
    if (v instanceof Boolean) return ((Boolean) v) ? "true" : null;
    if (v instanceof Double) return ((Double) v) == 0.0 ? null : v.toString();
    if (v instanceof Number) return ((Number) v).longValue() == 0 ? null : v.toString();
    if (v instanceof String) return quote((String) v);
    if (v instanceof TEnum) return ref(v.getClass()) + "." + ((Enum<?>) v).name();
    if (v instanceof java.util.Collection && ((java.util.Collection<?>) v).isEmpty()) {
      return v instanceof java.util.Set ? "{}" : "[]";
    }
    if (v instanceof Map && ((Map<?, ?>) v).isEmpty()) return "{}";
    throw new IllegalStateException("cannot spell default value " + v + " (" + v.getClass() + ")");
  }

  @SuppressWarnings({"rawtypes", "unchecked"})
  static void fields(String kind, String mod, String owner, Class c, boolean withDefaults)
      throws Exception {
    Map<TFieldIdEnum, FieldMetaData> meta = FieldMetaData.getStructMetaDataMap(c);
    Object fresh = null;
    if (withDefaults && !TUnion.class.isAssignableFrom(c)) {
      fresh = c.getConstructor().newInstance();
    }
    List<Map.Entry<TFieldIdEnum, FieldMetaData>> entries = new ArrayList<>(meta.entrySet());
    entries.sort(Comparator.comparingInt(e -> e.getKey().getThriftFieldId()));
    for (Map.Entry<TFieldIdEnum, FieldMetaData> e : entries) {
      FieldMetaData f = e.getValue();
      StringBuilder line = new StringBuilder();
      line.append(kind).append('\t').append(mod).append('\t').append(owner).append('\t')
          .append(e.getKey().getThriftFieldId()).append('\t').append(f.fieldName).append('\t')
          .append(type(f.valueMetaData, declared(c, f)));
      if (!kind.equals("result")) {
        line.append('\t').append(requiredness(f.requirementType));
        if (fresh != null) {
          String d = literal(((TBase) fresh).getFieldValue(e.getKey()));
          if (d != null) line.append('\t').append(d);
        }
      }
      System.out.println(line);
    }
  }

  static void constants(Class<?> c, String mod) throws Exception {
    Field[] all = c.getDeclaredFields();
    Arrays.sort(all, Comparator.comparing(Field::getName));
    for (Field f : all) {
      int m = f.getModifiers();
      if (!Modifier.isStatic(m) || !Modifier.isPublic(m)) continue;
      Object v = f.get(null);
      String t = v instanceof String ? "string" : v instanceof Byte ? "byte"
          : v instanceof Short ? "i16" : v instanceof Integer ? "i32" : v instanceof Long ? "i64"
          : null;
      if (t == null) throw new IllegalStateException("constant of unknown type: " + f);
      String value = v instanceof String ? quote((String) v) : v.toString();
      System.out.println("const\t" + mod + "\t" + f.getName() + "\t" + t + "\t" + value);
    }
  }

  static void service(Class<?> outer, String mod) throws Exception {
    Class<?> iface = Class.forName(outer.getName() + "$Iface");
    String parent = "-";
    for (Class<?> up : iface.getInterfaces()) {
      if (up.getSimpleName().equals("Iface")) parent = ref(up.getEnclosingClass());
    }
    String name = outer.getSimpleName();
    System.out.println("service\t" + mod + "\t" + name + "\t" + parent);
    TreeSet<String> names = new TreeSet<>();
    for (Method m : iface.getDeclaredMethods()) names.add(m.getName());
    for (String m : names) {
      Class<?> args = Class.forName(outer.getName() + "$" + m + "_args");
      Class<?> result = null;
      try {
        result = Class.forName(outer.getName() + "$" + m + "_result");
      } catch (ClassNotFoundException oneway) {
        // Thrift generates no result struct for a oneway method.
      }
      System.out.println("method\t" + mod + "\t" + name + "\t" + m + "\t"
          + (result == null ? "oneway" : "call"));
      fields("arg", mod, name + "." + m, args, true);
      if (result != null) fields("result", mod, name + "." + m, result, false);
    }
  }

  public static void main(String[] jars) throws Exception {
    TreeSet<String> classes = new TreeSet<>();
    for (String jar : jars) {
      try (JarFile j = new JarFile(jar)) {
        for (JarEntry e : java.util.Collections.list(j.entries())) {
          String n = e.getName();
          if (!n.endsWith(".class") || n.contains("$")) continue;
          String cls = n.substring(0, n.length() - 6).replace('/', '.');
          for (String[] p : PACKAGES) {
            if (cls.startsWith(p[0] + ".") && cls.lastIndexOf('.') == p[0].length()) {
              classes.add(cls);
            }
          }
        }
      }
    }
    for (String cls : classes) {
      Class<?> c;
      try {
        c = Class.forName(cls);
      } catch (LinkageError | ClassNotFoundException skipped) {
        System.err.println("skipped (does not load): " + cls + ": " + skipped);
        continue;
      }
      String mod = module(c);
      if (c.isEnum() && TEnum.class.isAssignableFrom(c)) {
        for (Object o : c.getEnumConstants()) {
          System.out.println("enum\t" + mod + "\t" + c.getSimpleName() + "\t" + ((Enum<?>) o).name()
              + "\t" + ((TEnum) o).getValue());
        }
      } else if (TBase.class.isAssignableFrom(c) && !Modifier.isAbstract(c.getModifiers())) {
        String kind = TUnion.class.isAssignableFrom(c) ? "union"
            : TException.class.isAssignableFrom(c) ? "exception" : "struct";
        System.out.println("struct\t" + mod + "\t" + c.getSimpleName() + "\t" + kind);
        fields("field", mod, c.getSimpleName(), c, true);
      } else if (c.getSimpleName().endsWith("Constants")) {
        constants(c, mod);
      } else {
        boolean isService = false;
        for (Class<?> inner : c.getDeclaredClasses()) {
          if (inner.getSimpleName().equals("Iface")) isService = true;
        }
        if (isService) service(c, mod);
      }
    }
  }
}
